"""compose.yaml's proxy (``deploy/Caddyfile``) in front of the web process, both real: slow
clients cost the proxy connections, not the web process's threads; the web process is told
the client's address in ``X-Forwarded-For`` (a forged one is replaced), so failed logins are
counted per client, and that the request came over HTTPS; a body over the bound is refused by
the proxy. The Caddyfile is served as written but for its site address (plain HTTP on a
loopback port here, not TLS for TGCP_DOMAIN), its upstream (the test's web process) and, for
Debian's caddy 2.6, the old spelling of the request buffer (as ``.ci/lint-ops`` checks it)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.ports import free_port
from tests.processes import ROOT, kill_group, start_web, wait_until_healthy, web_env

CADDY = shutil.which("caddy")
# Debian's and Ubuntu's caddy is 2.6; the image's (caddy:2.10) has request_buffers.
OLD_CADDY = CADDY is not None and bool(
    re.match(
        r"v?2\.[0-6]\.", subprocess.run([CADDY, "version"], capture_output=True, text=True).stdout
    )
)
LOGIN_POST = (
    b"POST /admin/login/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    b"Content-Type: application/x-www-form-urlencoded\r\n"
    b"Cookie: csrftoken=" + b"A" * 32 + b"\r\nContent-Length: 10000\r\n\r\n"
)

pytestmark = pytest.mark.timeout(120)


@dataclass
class Stack:
    web_port: int
    proxy_port: int


def caddyfile_for_test(proxy_port: int, web_port: int) -> str:
    text = (ROOT / "deploy" / "Caddyfile").read_text()
    assert "{$TGCP_DOMAIN} {" in text and "reverse_proxy web:8000 {" in text
    text = text.replace("{$TGCP_DOMAIN} {", f"http://127.0.0.1:{proxy_port} {{")
    text = text.replace("reverse_proxy web:8000 {", f"reverse_proxy 127.0.0.1:{web_port} {{")
    # Several caddy processes on one machine: no admin endpoint (it would take :2019).
    text = text.replace("{\n\tservers {", "{\n\tadmin off\n\tservers {", 1)
    if OLD_CADDY:
        text = re.sub(r"(?m)^(\s*)request_buffers \S+$", r"\1buffer_requests", text)
    return text


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    """The web process with 2 threads (the test settings' views added) behind the proxy."""
    if CADDY is None:
        pytest.skip("needs caddy (apt-get install caddy)")
    web_port, proxy_port = free_port(), free_port()
    env = web_env(
        tmp_path,
        web_port,
        WEB_CONCURRENCY="1",
        WEB_THREADS="2",
        DJANGO_SETTINGS_MODULE="tests.web.settings",
        DJANGO_BEHIND_TLS_PROXY="true",
        DJANGO_SSL_REDIRECT="false",  # the test's proxy speaks plain HTTP
    )
    web = start_web(env)
    config = tmp_path / "Caddyfile"
    config.write_text(caddyfile_for_test(proxy_port, web_port))
    proxy = subprocess.Popen(
        [str(CADDY), "run", "--adapter", "caddyfile", "--config", str(config)],
        env={**os.environ, "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path)},
        stdout=subprocess.DEVNULL,
        stderr=(tmp_path / "caddy.log").open("wb"),
        start_new_session=True,
    )
    try:
        wait_until_healthy(web_port)
        wait_until_healthy(proxy_port)
        yield Stack(web_port, proxy_port)
    finally:
        kill_group(proxy)
        kill_group(web)


def get(port: int, path: str, headers: str = "", timeout: float = 5) -> tuple[int, bytes]:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{headers}Connection: close\r\n\r\n".encode()
        )
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


def answered_within(port: int, seconds: float) -> bool:
    try:
        return get(port, "/healthz", timeout=seconds)[0] == 200
    except OSError:
        return False


def test_slow_logins_through_the_proxy_hold_no_thread_of_the_web_process(stack: Stack) -> None:
    """Six logins sending a byte a second would hold both threads of the web process if they
    reached it (straight to it, /healthz then waits: checked first); through the proxy, which
    reads each body whole before passing it on, /healthz is answered throughout."""
    slow = [socket.create_connection(("127.0.0.1", stack.proxy_port)) for _ in range(6)]
    for sock in slow:
        sock.sendall(LOGIN_POST)
    try:
        answered = tries = 0
        started = time.monotonic()
        while time.monotonic() - started < 5:
            for sock in slow:
                sock.sendall(b"a")
            tries += 1
            answered += answered_within(stack.proxy_port, 1.0)
            time.sleep(0.5)
        assert answered == tries, f"{answered} of {tries}"
        # The same logins sent straight to the web process take both of its threads.
        direct = [socket.create_connection(("127.0.0.1", stack.web_port)) for _ in range(2)]
        for sock in direct:
            sock.sendall(LOGIN_POST)
        time.sleep(0.5)
        assert not answered_within(stack.web_port, 1.0)
        for sock in direct:
            sock.close()
    finally:
        for sock in slow:
            sock.close()


def test_the_web_process_is_told_the_client_address_and_https(stack: Stack) -> None:
    status, body = get(stack.proxy_port, "/test/forwarded", "X-Forwarded-For: 203.0.113.9\r\n")
    assert status == 200
    told = json.loads(body)
    # The forged entry is replaced, not kept to the left: one address, the client's.
    assert told["x_forwarded_for"] == "127.0.0.1"
    assert told["client_ip"] == "127.0.0.1"
    assert told["x_forwarded_proto"] == "http"  # the scheme the client used: https in compose
    assert told["host"] == "127.0.0.1"


def test_a_body_over_the_bound_is_refused_by_the_proxy(stack: Stack) -> None:
    size = 12 * 1024 * 1024  # over the Caddyfile's 11MB
    with socket.create_connection(("127.0.0.1", stack.proxy_port), timeout=10) as sock:
        sock.sendall(
            b"POST /telegram/webhook HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % size
        )
        with contextlib.suppress(OSError):  # the proxy may stop reading once it has refused
            sock.sendall(b"x" * size)
        data = sock.recv(65536)
    status = data.split(b"\r\n", 1)[0]
    # caddy 2.6 buffers the part under the bound and may then fail sending the rest on (502)
    # before its 413 is written: refused either way.
    refused = [b"HTTP/1.1 413 Request Entity Too Large"]
    assert status in ([*refused, b"HTTP/1.1 502 Bad Gateway"] if OLD_CADDY else refused)


def test_the_nginx_example_forwards_the_client_address_and_buffers() -> None:
    """docs/operations.md's nginx example, for the server without Docker: without
    X-Forwarded-For every login counts as 127.0.0.1 (DJANGO_TRUSTED_PROXY_COUNT=1 behind the
    proxy), and five wrong passwords from anyone lock the owner out."""
    guide = (ROOT / "docs" / "operations.md").read_text()
    example = guide.split("```nginx\n", 1)[1].split("```", 1)[0]
    directives = {line.split("#")[0].strip() for line in example.splitlines()}
    for needed in (
        "proxy_set_header X-Forwarded-For $remote_addr;",
        "proxy_set_header X-Forwarded-Proto $scheme;",
        "proxy_set_header Host $host;",
        "proxy_request_buffering on;",
        "client_max_body_size  11m;",
        "client_header_timeout 10s;",
    ):
        assert needed in directives, needed
