"""gunicorn's worker whose threads take requests off one epoll set (``config/gunicorn_worker.py``):
every request answered once, on its own connection, with more connections than threads and
requests sent together; a connection that sends nothing holds no thread; idle connections are
ended after the keep-alive and free their place; a stop ends the kept-alive connections and
exits. Real processes: ``python -m config.web`` as the image runs it, on a throwaway SQLite
database, with gunicorn settings from ``GUNICORN_CMD_ARGS``."""

from __future__ import annotations

import os
import resource
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from config.gunicorn_worker import EpollThreadWorker
from telegram_bot.processes import descendants
from tests.ports import free_port
from tests.processes import kill_group, start_web, wait_until_healthy, web_env

HEALTHZ = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
WEBHOOK_GET = b"GET /telegram/webhook HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"  # 405: POST only

pytestmark = pytest.mark.timeout(120)


class Web:
    def __init__(self, process: subprocess.Popen[bytes], port: int) -> None:
        self.process, self.port = process, port

    def connect(self, timeout: float = 10) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=timeout)


@pytest.fixture
def web(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Web]:
    """One gunicorn worker; ``threads`` and ``gunicorn`` (its extra arguments) from the test's
    ``web_options`` mark."""
    mark = request.node.get_closest_marker("web_options")
    options = {"threads": 2, "gunicorn": "", **(mark.kwargs if mark else {})}
    port = free_port()
    env = web_env(
        tmp_path,
        port,
        DJANGO_SETTINGS_MODULE="tests.web.settings",  # the product's, and /test/exit
        WEB_CONCURRENCY="1",
        WEB_THREADS=str(options["threads"]),
        GUNICORN_CMD_ARGS=str(options["gunicorn"]),
    )
    log = (tmp_path / "web.log").open("wb")
    process = start_web(env, log)
    try:
        wait_until_healthy(port)
        yield Web(process, port)
    finally:
        kill_group(process)
        log.close()
    text = (tmp_path / "web.log").read_text(errors="replace")
    assert "Traceback" not in text, text[-3000:]


def read_response(sock: socket.socket, buffer: bytearray) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 response off ``sock`` (what follows it stays in ``buffer``)."""
    while b"\r\n\r\n" not in buffer:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"closed after {bytes(buffer)!r}")
        buffer += chunk
    head, _, rest = bytes(buffer).partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, v in (x.split(":", 1) for x in lines[1:])}
    length = int(headers.get("content-length", "0"))
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed in a body")
        rest += chunk
    buffer[:] = rest[length:]
    return int(lines[0].split()[1]), headers, rest[:length]


def closed_by_server(sock: socket.socket, timeout: float = 10) -> bool:
    sock.settimeout(timeout)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def settled_descriptors(pid: int) -> int:
    """How many descriptors ``pid`` holds, once the count stays the same for half a second."""
    count, deadline = -1, time.monotonic() + 10
    while time.monotonic() < deadline:
        now = len(os.listdir(f"/proc/{pid}/fd"))
        if now == count:
            return count
        count = now
        time.sleep(0.5)
    return count


@pytest.mark.web_options(threads=2)
def test_requests_on_more_connections_than_threads_are_each_answered_once(web: Web) -> None:
    clients, rounds = 24, 60
    failures: list[str] = []
    answered = [0] * clients

    def client(n: int) -> None:
        try:
            with web.connect() as sock:
                buffer = bytearray()
                for r in range(rounds):
                    # Alternating paths: an answer given to the wrong request shows. Every
                    # tenth round sends two requests in one write (the second is in the
                    # worker's buffer, not on the socket, when the first is answered).
                    first = HEALTHZ if (n + r) % 2 else WEBHOOK_GET
                    sent = [first, WEBHOOK_GET] if r % 10 == 0 else [first]
                    sock.sendall(b"".join(sent))
                    for request in sent:
                        status, _, _ = read_response(sock, buffer)
                        expected = 200 if request == HEALTHZ else 405
                        assert status == expected, (n, r, status)
                        answered[n] += 1
                assert buffer == b""  # nothing more than was asked for
        except Exception as exc:  # the assertion in the main thread says which
            failures.append(f"client {n}: {exc!r}")

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert failures == []
    assert answered == [rounds + rounds // 10] * clients


@pytest.mark.web_options(threads=1, gunicorn="--keep-alive 30")
def test_a_connection_that_sends_nothing_holds_no_thread(web: Web) -> None:
    with web.connect() as silent, web.connect() as other:
        time.sleep(0.3)  # accepted and waiting: under gthread it would hold the one thread
        started = time.monotonic()
        other.sendall(HEALTHZ)
        status, _, _ = read_response(other, bytearray())
        assert status == 200
        # gthread's thread waits up to 5 s for a new connection's request before it serves
        # another one; here the silent connection is only in the epoll set.
        assert time.monotonic() - started < 3
        silent.sendall(HEALTHZ)  # and it is served when it speaks
        assert read_response(silent, bytearray())[0] == 200


@pytest.mark.web_options(threads=1, gunicorn="--worker-connections 3 --keep-alive 3")
def test_a_full_worker_accepts_again_when_a_connection_ends(web: Web) -> None:
    first, second = web.connect(), web.connect()
    for sock in (first, second):
        sock.sendall(HEALTHZ)
        assert read_response(sock, bytearray())[0] == 200
    third = web.connect()  # accepted: the worker holds its three connections
    with web.connect() as fourth:  # the kernel completes the handshake; the worker waits
        fourth.sendall(HEALTHZ)
        fourth.settimeout(0.7)
        with pytest.raises(TimeoutError):
            fourth.recv(1)
        first.close()  # the worker sees the end of stream, closes its side, accepts again
        fourth.settimeout(10)
        assert read_response(fourth, bytearray())[0] == 200
    # Idle connections are ended after the keep-alive (3 s), the silent one too.
    assert closed_by_server(second)
    assert closed_by_server(third)
    second.close()
    third.close()
    with web.connect() as fifth:
        fifth.sendall(HEALTHZ)
        assert read_response(fifth, bytearray())[0] == 200


@pytest.mark.web_options(threads=2, gunicorn="--keep-alive 1")
def test_a_request_being_read_is_not_ended_by_the_keep_alive(web: Web) -> None:
    with web.connect() as slow:
        slow.sendall(HEALTHZ)
        assert read_response(slow, bytearray())[0] == 200
        # The next request comes in two parts, the second after the keep-alive has passed:
        # the thread reading it owns the connection, which is no longer idle.
        slow.sendall(HEALTHZ[:20])
        time.sleep(2.5)
        slow.sendall(HEALTHZ[20:])
        assert read_response(slow, bytearray())[0] == 200


@pytest.mark.web_options(threads=2, gunicorn="--keep-alive 30")
def test_a_worker_out_of_file_descriptors_accepts_again_when_some_close(web: Web) -> None:
    (worker,) = descendants(web.process.pid)
    held = settled_descriptors(worker)  # the health check's connection closed, say
    resource.prlimit(worker, resource.RLIMIT_NOFILE, (held + 3, held + 3))
    # The kernel takes all eight; the worker about three (a descriptor its own code opens or
    # closes meanwhile moves that by one), and the others wait in the accept queue.
    clients = [web.connect() for _ in range(8)]
    for sock in clients:
        sock.sendall(HEALTHZ)
    answered, waiting = [], []
    for sock in clients:
        sock.settimeout(1.5)
        try:
            answered.append((read_response(sock, bytearray())[0], sock))
        except TimeoutError:
            waiting.append(sock)
    assert [status for status, _ in answered] == [200] * len(answered)
    assert 1 <= len(answered) <= 5 and len(waiting) >= 3, (len(answered), len(waiting))
    for _, sock in answered:
        sock.close()  # which gives the worker its descriptors back
    for sock in waiting:  # accepted once there is room: the listener was not given up
        sock.settimeout(10)
        assert read_response(sock, bytearray())[0] == 200
        sock.close()


@pytest.mark.web_options(threads=1, gunicorn="--keep-alive 1")
def test_a_request_that_came_in_time_is_answered_when_a_thread_frees(web: Web) -> None:
    with web.connect() as waiting, web.connect() as slow:
        waiting.sendall(HEALTHZ)
        assert read_response(waiting, bytearray())[0] == 200
        slow.sendall(HEALTHZ[:20])  # the one thread reads it, and waits for the rest
        time.sleep(0.3)
        waiting.sendall(HEALTHZ)  # in time: its keep-alive (1 s) has not passed
        time.sleep(2.5)  # it has now, with the request waiting for the thread
        slow.sendall(HEALTHZ[20:])
        assert read_response(slow, bytearray())[0] == 200
        assert read_response(waiting, bytearray())[0] == 200


@pytest.mark.web_options(threads=1, gunicorn="--keep-alive 30")
def test_a_view_raising_system_exit_stops_the_worker_which_is_replaced(web: Web) -> None:
    (worker,) = descendants(web.process.pid)
    with web.connect() as sock:
        sock.sendall(b"GET /test/exit HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert closed_by_server(sock)  # no answer: the worker is going
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # the arbiter starts another worker
        if (workers := descendants(web.process.pid)) and workers != [worker]:
            break
        time.sleep(0.1)
    assert workers and workers != [worker]
    wait_until_healthy(web.port)
    with web.connect() as sock:  # served again (by a worker with its one thread)
        sock.sendall(HEALTHZ)
        assert read_response(sock, bytearray())[0] == 200


@pytest.mark.web_options(threads=2, gunicorn="--keep-alive 30")
def test_a_malformed_request_is_refused_and_the_worker_goes_on(web: Web) -> None:
    with web.connect() as bad:
        bad.sendall(b"NOT HTTP AT ALL\r\n\r\n")
        status, _, _ = read_response(bad, bytearray())
        assert status == 400
        assert closed_by_server(bad)
    with web.connect() as good:
        for _ in range(3):
            good.sendall(HEALTHZ)
            assert read_response(good, bytearray())[0] == 200


@pytest.mark.web_options(threads=2, gunicorn="--keep-alive 30")
def test_a_stop_answers_kept_alive_connections_then_ends_them(web: Web) -> None:
    kept, idle = web.connect(), web.connect()
    for sock in (kept, idle):
        sock.sendall(HEALTHZ)
        assert read_response(sock, bytearray())[0] == 200
    stopped = time.monotonic()
    web.process.send_signal(signal.SIGTERM)
    # Until the worker has the signal its answers keep the connection; from then on, for the
    # two seconds it lingers, it answers once more and says it closes.
    buffer, deadline = bytearray(), time.monotonic() + 10
    while True:
        kept.sendall(HEALTHZ)
        status, headers, _ = read_response(kept, buffer)
        assert status == 200
        if headers.get("connection") == "close" or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert headers.get("connection") == "close"
    assert closed_by_server(kept)
    # The idle one is ended after those two seconds, not its 30 s keep-alive, and the server
    # exits well within its graceful timeout (8 s), which it would otherwise wait out.
    assert closed_by_server(idle)
    assert web.process.wait(timeout=20) == 0
    assert time.monotonic() - stopped < 6
    kept.close()
    idle.close()


def test_tls_and_http2_are_refused_at_start() -> None:
    log = SimpleNamespace(warning=lambda *a: None)
    plain = dict(worker_connections=1000, threads=4, keepalive=2)
    EpollThreadWorker.check_config(
        SimpleNamespace(**plain, is_ssl=False, http_protocols=["h1"], http2_cleartext="off"),
        log,
    )
    for refused in (
        dict(is_ssl=True, http_protocols=["h1"], http2_cleartext="off"),
        dict(is_ssl=False, http_protocols=["h2", "h1"], http2_cleartext="off"),
        dict(is_ssl=False, http_protocols=["h1"], http2_cleartext="upgrade"),
    ):
        with pytest.raises(RuntimeError, match=r"plain HTTP/1\.1 only"):
            EpollThreadWorker.check_config(SimpleNamespace(**plain, **refused), log)
