"""The bench's fake Bot API (``bench/fake_api.py``): the suite's answers behind a lean HTTP/1.1
front. It answers through the product's own client as the suite's fake does, keeps a
connection alive, reads pipelined requests in order, and refuses what it does not read
instead of answering it wrongly."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.harness import OWNER, TOKEN, free_port
from telegram_bot.client import TelegramClient
from telegram_bot.errors import TelegramApiError

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def fake_url() -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "bench/fake_api.py", str(port), "2"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        assert "fake Bot API on" in process.stdout.readline()
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)


def _raw(url: str, payload: bytes) -> bytes:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(payload)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def _post(method: str, body: bytes, *, last: bool = False) -> bytes:
    close = b"Connection: close\r\n" if last else b""
    return (
        f"POST /bot{TOKEN}/{method} HTTP/1.1\r\nHost: x\r\n".encode()
        + b"Content-Type: application/json\r\n"
        + close
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )


def test_the_product_client_gets_the_suite_fakes_answers(fake_url: str) -> None:
    with TelegramClient(TOKEN, fake_url) as client:
        sent = client.send_message(chat_id=OWNER, text="hello")
        assert sent["chat"]["id"] == OWNER and sent["text"] == "hello"
        # The two messages put there at start are the bench's buttons: they can be edited.
        edited = client.edit_message_text(chat_id=OWNER, message_id=1, text="edited")
        assert edited["text"] == "edited"
        with pytest.raises(TelegramApiError) as refused:
            client.call("sendMessage", chat_id=OWNER)  # no text: checked against the spec
        assert refused.value.status == 400


def test_pipelined_requests_are_answered_in_order_on_one_connection(fake_url: str) -> None:
    first = json.dumps({"chat_id": OWNER, "text": "one"}).encode()
    second = json.dumps({"chat_id": OWNER, "text": "two"}).encode()
    answer = _raw(fake_url, _post("sendMessage", first) + _post("sendMessage", second, last=True))
    responses = answer.split(b"HTTP/1.1 ")[1:]
    assert [r.split(b" ", 1)[0] for r in responses] == [b"200", b"200"]
    assert b'"text": "one"' in responses[0] or b'"text":"one"' in responses[0]
    assert b'"two"' in responses[1] and b"Connection: close" in responses[1]


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"POST /bot1:x/sendMessage HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5\r\nhello\r\n0\r\n\r\n",
        b"POST /bot1:x/sendMessage HTTP/1.1\r\nContent-Length: -3\r\n\r\n",
        b"GARBAGE\r\n\r\n",
    ],
    ids=["chunked", "bad length", "no request line"],
)
def test_what_the_front_does_not_read_is_refused_and_closed(
    fake_url: str, request_bytes: bytes
) -> None:
    answer = _raw(fake_url, request_bytes)  # returns only once the server closed
    assert answer.startswith(b"HTTP/1.1 400 ")
    assert b"Connection: close" in answer
