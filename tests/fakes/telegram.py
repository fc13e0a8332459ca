"""A fake Telegram Bot API: a real loopback HTTP server, or an in-process httpx transport.

Both run the same `FakeTelegram` request handling (tests/fakes/telegram_core.py), which checks
every call against the Bot API specification and answers like Telegram. Typical use::

    with FakeTelegramServer() as server:
        client = TelegramClient(TOKEN, server.base_url)
        server.fail_next("sendMessage", status=429, retry_after=3)
        ...
        assert server.calls_to("sendMessage")[0].params["chat_id"] == 42

or, without sockets, `httpx.Client(transport=FakeTelegramTransport(FakeTelegram()))`.
Run it by hand with `python -m tests.fakes.telegram --port 8081`.
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

import httpx

from tests.fakes.botapi_spec import UploadedFile, load_spec
from tests.fakes.telegram_core import Call, FakeResponse, FakeTelegram

__all__ = [
    "FAKE_TOKEN",
    "Call",
    "FakeTelegram",
    "FakeTelegramServer",
    "FakeTelegramTransport",
    "UploadedFile",
]

# Shaped like a real token (so redaction tests see it as one), valid for no real bot.
FAKE_TOKEN = "123456789:AAFakeTokenForTestsOnly_0123456789abcdef"


class FakeTelegramServer(FakeTelegram):
    """The fake Bot API on a real HTTP server on 127.0.0.1 (port 0: an ephemeral port).

    All of FakeTelegram's control API (`calls`, `fail_next`, `push_update`, ...) is available
    on the server object. HTTP/1.1 keep-alive, so client connection reuse is observable through
    `connections_opened`.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, **options: Any) -> None:
        super().__init__(**options)
        self.host = host
        self.port = port
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._sockets: set[socket.socket] = set()
        self._connections = 0

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:PORT`; pass it as the client's base URL."""
        if self._httpd is None:
            raise RuntimeError("the fake Telegram server is not running")
        return f"http://{self.host}:{self._httpd.server_address[1]}"

    @property
    def connections_opened(self) -> int:
        """TCP connections accepted since start (not reset by `reset()`)."""
        with self.lock:
            return self._connections

    def start(self) -> FakeTelegramServer:
        """Bind and serve in a daemon thread; returns self."""
        self.stopping.clear()
        self._httpd = _HTTPServer((self.host, self.port), _Handler)
        self._httpd.fake = self
        httpd = self._httpd
        self._thread = threading.Thread(
            target=lambda: httpd.serve_forever(poll_interval=0.05),
            name="fake-telegram",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, wake long polls and slow answers, close open connections."""
        if self._httpd is None:
            return
        self.stopping.set()
        with self.lock:
            self.lock.notify_all()
            sockets, self._sockets = set(self._sockets), set()
        self._httpd.shutdown()
        for sock in sockets:
            _close_quietly(sock)
        self._httpd.server_close()
        self._httpd = None

    def __enter__(self) -> FakeTelegramServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _connection_opened(self, sock: socket.socket) -> None:
        with self.lock:
            self._connections += 1
            self._sockets.add(sock)

    def _connection_closed(self, sock: socket.socket) -> None:
        with self.lock:
            self._sockets.discard(sock)


class FakeTelegramTransport(httpx.BaseTransport):
    """An httpx transport answering from a FakeTelegram in-process (no sockets).

    A delay longer than the request's read timeout raises `httpx.ReadTimeout` after waiting
    that timeout, and a dropped connection raises `httpx.RemoteProtocolError`, as on a network.
    """

    def __init__(self, fake: FakeTelegram | None = None) -> None:
        self.fake = fake or FakeTelegram()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Answer one request."""
        body = request.read()
        answer = self.fake.handle(
            request.url.path,
            request.headers.get("content-type"),
            body,
            request.url.query.decode("ascii", "replace"),
        )
        read_timeout = request.extensions.get("timeout", {}).get("read")
        if answer.delay and read_timeout is not None and answer.delay > read_timeout:
            self.fake.wait(read_timeout)
            raise httpx.ReadTimeout("timed out", request=request)
        self.fake.wait(answer.delay)
        if answer.drop:
            raise httpx.RemoteProtocolError("Server disconnected", request=request)
        headers = {"Content-Type": "application/json", **answer.headers}
        return httpx.Response(answer.status, headers=headers, content=answer.body())


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    fake: FakeTelegramServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that reset its connection (a process a test killed mid-call) is what
        Telegram sees too, not the fake's error: no traceback for it in the suite's output."""
        if isinstance(sys.exc_info()[1], ConnectionResetError | BrokenPipeError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like api.telegram.org
    # Answer at once: without it each keep-alive answer waits for the client's delayed ACK
    # (about 40 ms a call).
    disable_nagle_algorithm = True
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        self.server.fake._connection_opened(self.connection)

    def finish(self) -> None:
        self.server.fake._connection_closed(self.connection)
        super().finish()

    def do_POST(self) -> None:
        self._serve()

    def do_GET(self) -> None:
        self._serve()

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default stderr access log (it would print the token)."""

    def _serve(self) -> None:
        fake = self.server.fake
        url = urlsplit(self.path)
        answer = fake.handle(url.path, self.headers.get("Content-Type"), self._body(), url.query)
        fake.wait(answer.delay)
        if answer.drop or fake.stopping.is_set():
            self.close_connection = True
            return
        self._send(answer)

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            return self._chunked_body()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _chunked_body(self) -> bytes:
        chunks = []
        while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
            chunks.append(self.rfile.read(size))
            self.rfile.readline()
        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
            pass  # trailers
        return b"".join(chunks)

    def _send(self, answer: FakeResponse) -> None:
        body = answer.body()
        try:
            self.send_response(answer.status)
            headers = {"Content-Type": "application/json", **answer.headers}
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:  # the client gave up (timed out) before the answer
            self.close_connection = True


def _close_quietly(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def _print_call(call: Call) -> None:
    params = " ".join(f"{key}={_short(value)}" for key, value in call.params.items())
    outcome = f"{call.status} {call.description}".strip()
    line = f"{time.strftime('%H:%M:%S')} {call.method} {outcome} {params}".rstrip()
    print(line.replace(call.token, "[TOKEN]") if call.token else line, flush=True)


def _short(value: Any) -> str:
    if isinstance(value, UploadedFile):
        return f"<file {value.filename} {len(value.data)} bytes>"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def main(argv: list[str] | None = None) -> None:
    """Run the fake server in the foreground, printing one line per call (never the token)."""
    parser = argparse.ArgumentParser(description="Fake Telegram Bot API server")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8081)
    parser.add_argument("--token", help="accept only this token (default: any well-formed one)")
    parser.add_argument("--spec", help="path to api.json (default: $BOTAPI_SPEC_PATH or shared)")
    parser.add_argument("--long-poll-cap", type=float, default=30.0)
    args = parser.parse_args(argv)
    server = FakeTelegramServer(
        args.host,
        args.port,
        spec=load_spec(args.spec),
        token=args.token,
        long_poll_cap=args.long_poll_cap,
        on_call=_print_call,
    )
    with server:
        print(f"fake Bot API ({server.spec.version}) on {server.base_url}", flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            print("stopping", flush=True)


if __name__ == "__main__":
    main()
