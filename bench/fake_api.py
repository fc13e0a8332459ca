"""The fake Bot API of the suite (``tests/fakes``) on a loopback port for ``bench/run.py``:
the same answers, every call checked against the Bot API spec (``FakeTelegram.handle``), behind
a lean HTTP/1.1 front instead of ``http.server``.

    python bench/fake_api.py PORT [MESSAGES]

``http.server`` parses each request's headers with the ``email`` package and runs a thread per
connection: about ten times the work of the fake's own answer, on the two cores the product
under test shares. Here one asyncio loop reads keep-alive requests with a ``Content-Length``
body (what the product's client sends) and answers ``Content-Length`` bodies, with TCP_NODELAY.
The suite keeps ``http.server`` (chunked bodies, dropped connections, delays, downloads).

MESSAGES bot messages are first put in the owner's chat (OWNER, 1 ... MESSAGES), the messages
whose buttons the bench presses: each press edits a message of its own (Telegram refuses an
edit to the same content, "message is not modified").
"""

from __future__ import annotations

import asyncio
import socket
import sys
from http import HTTPStatus
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fakes import telegram
from tests.fakes.telegram_core import FakeResponse

OWNER = 1000
MAX_HEAD = 16 * 1024
MAX_BODY = 64 * 1024 * 1024
REASONS = {status.value: status.phrase for status in HTTPStatus}


class BadRequest(Exception):
    """A request this front does not read (chunked, too large, malformed): answered 400 and
    the connection closed."""


class FakeProtocol(asyncio.Protocol):
    def __init__(self, fake: telegram.FakeTelegram) -> None:
        self.fake = fake
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        try:
            while self._one_request():
                pass
        except BadRequest as exc:
            self._write(FakeResponse(400, {"ok": False, "description": str(exc)}), close=True)

    def _one_request(self) -> bool:
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(self.buffer) > MAX_HEAD:
                raise BadRequest("request head too large")
            return False
        lines = bytes(self.buffer[:end]).decode("latin-1").split("\r\n")
        try:
            _method, target, _version = lines[0].split(" ", 2)
        except ValueError:
            raise BadRequest("malformed request line") from None
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if "chunked" in headers.get("transfer-encoding", "").lower():
            raise BadRequest("chunked bodies are not read here")
        length = headers.get("content-length", "0")
        if not length.isdigit() or int(length) > MAX_BODY:
            raise BadRequest("bad content-length")
        start = end + 4
        if len(self.buffer) < start + int(length):
            return False
        body = bytes(self.buffer[start : start + int(length)])
        del self.buffer[: start + int(length)]
        url = urlsplit(target)
        answer = self.fake.handle(url.path, headers.get("content-type"), body, url.query)
        close = headers.get("connection", "").lower() == "close" or answer.drop
        if answer.drop:
            assert self.transport is not None
            self.transport.close()
            return False
        self._write(answer, close=close)
        return not close

    def _write(self, answer: FakeResponse, *, close: bool) -> None:
        assert self.transport is not None
        body = answer.body()
        headers = {"Content-Type": "application/json", **answer.headers}
        reason = REASONS.get(answer.status, "")
        head = [f"HTTP/1.1 {answer.status} {reason}"]
        head += [f"{name}: {value}" for name, value in headers.items()]
        head.append(f"Content-Length: {len(body)}")
        if close:
            head.append("Connection: close")
        self.transport.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)
        if close:
            self.transport.close()


async def serve(port: int, messages: int) -> None:
    fake = telegram.FakeTelegram()
    path = f"/bot{telegram.FAKE_TOKEN}/sendMessage"
    body = b'{"chat_id": %d, "text": "Admin panel"}' % OWNER
    for _ in range(messages):
        fake.handle(path, "application/json", body)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: FakeProtocol(fake), "127.0.0.1", port, backlog=512)
    print(f"fake Bot API on http://127.0.0.1:{port}", flush=True)
    async with server:
        await server.serve_forever()


def main(port: int, messages: int) -> None:
    asyncio.run(serve(port, messages))


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 0)
