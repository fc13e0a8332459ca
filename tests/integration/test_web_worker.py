"""The web server as the image runs it (``python -m config.web``, ``config/web.py``), with real
connections: slow clients do not stop the default server (granian) from answering; a client
slow to send its headers is cut off; a process serves ``WEB_BACKPRESSURE`` connections at
once; every request is answered once, on its own connection; a malformed request is refused;
a stop answers the request in flight and ends the rest. Each test runs on a throwaway SQLite
database; those that hold for both servers run under each (``WEB_SERVER``)."""

from __future__ import annotations

import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from config.web import GRACEFUL_SECONDS
from telegram_bot.processes import descendants
from tests.ports import free_port
from tests.processes import kill_group, start_web, wait_until_healthy, web_env

HEALTHZ = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
WEBHOOK_GET = b"GET /telegram/webhook HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"  # 405: POST only
# A login whose body the view reads (CSRF compares the form's token with the cookie's), so
# its thread waits for the body; without the cookie the answer (403) comes before the body.
LOGIN_POST = (
    b"POST /admin/login/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    b"Content-Type: application/x-www-form-urlencoded\r\n"
    b"Cookie: csrftoken=" + b"A" * 32 + b"\r\n"
    b"Content-Length: %d\r\n\r\n"
)

SERVERS = ["granian", "gunicorn"]

pytestmark = pytest.mark.timeout(150)


class Web:
    def __init__(self, process: subprocess.Popen[bytes], port: int) -> None:
        self.process, self.port = process, port

    def connect(self, timeout: float = 10) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=timeout)


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., Web]]:
    """Start the web process with the defaults and the given settings (``WEB_SERVER=...``);
    at the end, kill it and check that it logged no traceback (unless told it may)."""
    started: list[tuple[subprocess.Popen[bytes], Path, bool]] = []

    def start(traceback_expected: bool = False, **settings: str) -> Web:
        port = free_port()
        log_path = tmp_path / f"web-{len(started)}.log"
        with log_path.open("wb") as log:
            process = start_web(web_env(tmp_path, port, **settings), log)
        started.append((process, log_path, traceback_expected))
        wait_until_healthy(port)
        return Web(process, port)

    yield start
    for process, log_path, traceback_expected in started:
        kill_group(process)
        text = log_path.read_text(errors="replace")
        assert traceback_expected or "Traceback" not in text, text[-3000:]


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


def healthz_within(port: int, seconds: float) -> bool:
    """Whether a fresh connection gets ``/healthz`` answered 200 within ``seconds``."""
    deadline = time.monotonic() + seconds
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=seconds) as sock:
            sock.sendall(HEALTHZ)
            sock.settimeout(max(0.01, deadline - time.monotonic()))
            return read_response(sock, bytearray())[0] == 200
    except OSError:  # refused, reset, or the time is up (TimeoutError)
        return False


class SlowClients:
    """``headers`` connections sending a request's header lines, and ``bodies`` logins sending
    their body, one line or one byte per ``step()``: an attacker who holds connections open
    for the price of a few bytes a second."""

    def __init__(self, port: int, headers: int, bodies: int, body_length: int = 10_000) -> None:
        self.header_socks = [self._open(port, b"GET /healthz HTTP/1.1\r\n") for _ in range(headers)]
        self.body_socks = [self._open(port, LOGIN_POST % body_length) for _ in range(bodies)]
        self.steps = 0
        self.cut_off: set[socket.socket] = set()

    @staticmethod
    def _open(port: int, first: bytes) -> socket.socket:
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        sock.sendall(first)
        return sock

    def step(self) -> None:
        self.steps += 1
        line = b"X-Slow-%d: x\r\n" % self.steps
        for sock, data in [(s, line) for s in self.header_socks] + [
            (s, b"a") for s in self.body_socks
        ]:
            if sock in self.cut_off:
                continue
            try:
                sock.sendall(data)
            except OSError:  # the server ended it
                self.cut_off.add(sock)

    def bodies_still_open(self) -> int:
        """The logins the server still waits on: neither answered nor closed."""
        waiting = 0
        for sock in self.body_socks:
            sock.setblocking(False)
            try:
                sock.recv(1)  # an answer or the end of stream: not waiting
            except BlockingIOError:
                waiting += 1
            except OSError:
                pass
        return waiting

    def close(self) -> None:
        for sock in self.header_socks + self.body_socks:
            sock.close()


def test_slow_clients_do_not_stop_the_default_server(serve: Callable[..., Web]) -> None:
    """The default settings (2 processes; granian): 40 connections sending a header line a
    second and 30 logins sending a byte of their body a second, for 12 s, while a fresh
    connection asks for ``/healthz`` twice a second: at least 95% answered within 1 s. The
    issue's figure (200 + 100 slow clients, a line or a byte every 5 s, 60 s) answered 57 of
    57; under the set-up before (2 processes x 4 threads, gunicorn's or granian's) these
    figures answered none: each slow login held one of the 8 threads."""
    web = serve()
    slow = SlowClients(web.port, headers=40, bodies=30)
    answered = tries = 0
    try:
        started = time.monotonic()
        while time.monotonic() - started < 12:
            tick = time.monotonic()
            if tries % 2 == 0:
                slow.step()
            tries += 1
            answered += healthz_within(web.port, 1.0)
            time.sleep(max(0.0, 0.5 - (time.monotonic() - tick)))
        still_open = slow.bodies_still_open()
    finally:
        slow.close()
    assert still_open == 30  # the logins were really slow, not refused
    assert answered >= 0.95 * tries, f"{answered} of {tries} answered within 1 s"


def test_a_client_slow_with_its_headers_holds_no_thread_and_is_cut_off(
    serve: Callable[..., Web],
) -> None:
    """granian reads headers in Rust: with one thread, a request still sending its headers
    leaves the thread free, and is ended at WEB_HEADER_TIMEOUT_SECONDS, as is a kept-alive
    connection idle that long."""
    web = serve(WEB_CONCURRENCY="1", WEB_THREADS="1", WEB_HEADER_TIMEOUT_SECONDS="2")
    slow, idle = web.connect(), web.connect()
    idle.sendall(HEALTHZ)
    assert read_response(idle, bytearray())[0] == 200
    slow.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    started = time.monotonic()
    cut_off = None
    while time.monotonic() - started < 10 and cut_off is None:
        assert healthz_within(web.port, 1.0)  # the one thread is free meanwhile
        try:
            slow.sendall(b"X-Slow: x\r\n")
        except OSError:
            cut_off = time.monotonic() - started
        time.sleep(0.5)
    assert cut_off is not None and cut_off < 5, cut_off  # 2 s, and a send to notice
    assert closed_by_server(idle, timeout=1)  # idle since well over 2 s
    slow.close()
    idle.close()


@pytest.mark.parametrize("server", SERVERS)
def test_a_process_serves_its_backpressure_of_connections_then_the_next(
    serve: Callable[..., Web], server: str
) -> None:
    web = serve(WEB_SERVER=server, WEB_CONCURRENCY="1", WEB_BACKPRESSURE="8", WEB_THREADS="2")
    held = [web.connect() for _ in range(8)]
    for sock in held:
        sock.sendall(HEALTHZ)
        assert read_response(sock, bytearray())[0] == 200
    with web.connect() as ninth:  # the kernel completes the handshake; the server waits
        ninth.sendall(HEALTHZ)
        ninth.settimeout(1)
        with pytest.raises(TimeoutError):
            ninth.recv(1)
        held.pop().close()  # one ends: the ninth is taken and answered
        ninth.settimeout(10)
        assert read_response(ninth, bytearray())[0] == 200
    for sock in held:
        sock.close()


@pytest.mark.parametrize("server", SERVERS)
def test_requests_on_more_connections_than_threads_are_each_answered_once(
    serve: Callable[..., Web], server: str
) -> None:
    web = serve(WEB_SERVER=server, WEB_CONCURRENCY="1", WEB_THREADS="2")
    clients, rounds = 24, 30
    failures: list[str] = []
    answered = [0] * clients

    def client(n: int) -> None:
        try:
            with web.connect() as sock:
                buffer = bytearray()
                for r in range(rounds):
                    # Alternating paths: an answer given to the wrong request shows. Every
                    # tenth round sends two requests in one write (pipelined).
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


@pytest.mark.parametrize("server", SERVERS)
def test_a_malformed_request_is_refused_and_the_server_goes_on(
    serve: Callable[..., Web], server: str
) -> None:
    web = serve(WEB_SERVER=server, WEB_CONCURRENCY="1", WEB_THREADS="2")
    (worker,) = descendants(web.process.pid)
    with web.connect() as bad:
        bad.sendall(b"NOT HTTP AT ALL\r\n\r\n")
        status, _, _ = read_response(bad, bytearray())
        assert status == 400
        assert closed_by_server(bad)
    with web.connect() as good:
        for _ in range(3):
            good.sendall(HEALTHZ)
            assert read_response(good, bytearray())[0] == 200
    assert descendants(web.process.pid) == [worker]


@pytest.mark.parametrize("server", SERVERS)
def test_a_stop_answers_the_request_in_flight_and_exits(
    serve: Callable[..., Web], server: str
) -> None:
    """SIGTERM (docker stop, systemd): a login whose body is still arriving is answered
    once it has, an idle kept-alive connection is ended, and the server exits 0 well within
    its graceful timeout (8 s)."""
    web = serve(WEB_SERVER=server, WEB_CONCURRENCY="1", WEB_THREADS="2")
    idle = web.connect()
    idle.sendall(HEALTHZ)
    assert read_response(idle, bytearray())[0] == 200
    in_flight = web.connect()
    in_flight.sendall(LOGIN_POST % 10 + b"abcde")
    time.sleep(0.5)  # its thread is reading the body
    stopped = time.monotonic()
    web.process.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    in_flight.sendall(b"fghij")
    assert read_response(in_flight, bytearray())[0] == 403  # CSRF: the form has no token
    assert closed_by_server(idle)
    assert web.process.wait(timeout=20) == 0
    assert time.monotonic() - stopped < 7  # not the whole graceful timeout (8 s)
    in_flight.close()
    idle.close()


@pytest.mark.parametrize("server", SERVERS)
def test_a_view_raising_system_exit_leaves_the_server_serving(
    serve: Callable[..., Web], server: str
) -> None:
    """A ``sys.exit()`` deep in some library: granian answers 500 and its thread goes on,
    whatever the code; gunicorn's worker exits and the arbiter starts another (for a code
    other than 3 and 4: those stop gunicorn altogether, as a worker that cannot boot). Either
    way the server serves on, with all its threads."""
    web = serve(
        traceback_expected=True,
        WEB_SERVER=server,
        WEB_CONCURRENCY="1",
        WEB_THREADS="1",
        DJANGO_SETTINGS_MODULE="tests.web.settings",  # the product's, and /test/exit
    )
    (worker,) = descendants(web.process.pid)
    with web.connect() as sock:
        code = 3 if server == "granian" else 1
        sock.sendall(b"GET /test/exit?code=%d HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % code)
        if server == "granian":
            assert read_response(sock, bytearray())[0] == 500
        else:
            assert closed_by_server(sock)  # no answer: the worker is going
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        workers = descendants(web.process.pid)
        if len(workers) == 1 and (server == "granian" or workers != [worker]):
            break
        time.sleep(0.1)
    assert workers == [worker] if server == "granian" else workers not in ([], [worker])
    wait_until_healthy(web.port)
    with web.connect() as sock:  # served again, by the one thread
        for _ in range(3):
            sock.sendall(HEALTHZ)
            assert read_response(sock, bytearray())[0] == 200


def test_a_stop_while_the_workers_load_stays_within_the_images_budget(tmp_path: Path) -> None:
    """SIGTERM moments after the start (a deploy that changes its mind, a crash loop): a
    granian worker still loading the application never sees the signal and is killed at its
    timeout; granian stops its workers one after the other, so their timeouts share the 8 s
    the image gives (docker stop kills at 10 s). With each worker given the whole 8 s, this
    stop took 8.3-8.8 s; with its share, 4.4 s."""
    port = free_port()
    web = start_web(web_env(tmp_path, port))  # the defaults: granian, 2 processes
    try:
        deadline = time.monotonic() + 30
        while len(descendants(web.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)  # forked, loading Django
        stopped = time.monotonic()
        web.send_signal(signal.SIGTERM)
        assert web.wait(timeout=30) == 0
        took = time.monotonic() - stopped
    finally:
        kill_group(web)
    assert took < GRACEFUL_SECONDS, took
