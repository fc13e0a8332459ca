"""SENTRY_DSN: an error reaches Sentry (here a local server standing in for its ingestion
endpoint), and neither the bot token, the webhook secret, local variables nor request bodies
are in what was sent."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import threading
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

pytest.importorskip("sentry_sdk", reason="sentry-sdk is not installed")

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "123456789:AAHsentryTestTokenThatMustNeverLeave_xyz"
SECRET = "webhook-secret-never-sent-to-sentry"


class Ingest(BaseHTTPRequestHandler):
    received: list[bytes] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        encoding = self.headers.get("Content-Encoding", "")
        if encoding == "gzip":
            body = gzip.decompress(body)
        elif encoding == "deflate":
            body = zlib.decompress(body)
        elif encoding == "br":
            import brotli  # type: ignore[import-not-found]

            body = brotli.decompress(body)
        Ingest.received.append(body)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def sentry() -> Iterator[str]:
    Ingest.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Ingest)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://publickey@127.0.0.1:{server.server_address[1]}/1"
    finally:
        server.shutdown()


def test_errors_are_reported_without_secrets(sentry: str) -> None:
    code = (
        "import logging, sentry_sdk\n"
        "def fail(token):\n"
        f"    raise RuntimeError('getMe failed for /bot{TOKEN}/getMe with {SECRET}')\n"
        "try:\n"
        f"    fail('{TOKEN}')\n"
        "except RuntimeError:\n"
        "    logging.getLogger('telegram_bot.pipeline.process').exception('handler failed')\n"
        "sentry_sdk.flush(10)\n"
    )
    env = {
        **os.environ,
        "SENTRY_DSN": sentry,
        "TELEGRAM_BOT_TOKEN": TOKEN,
        "TELEGRAM_WEBHOOK_SECRET": SECRET,
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-v", "0", "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    sent = b"\n".join(Ingest.received)
    assert b"RuntimeError" in sent and b"handler failed" in sent
    assert b"[REDACTED]" in sent
    assert TOKEN.encode() not in sent
    assert TOKEN.split(":")[1].encode() not in sent
    assert SECRET.encode() not in sent
    assert b'"vars"' not in sent  # no local variables


def test_a_bad_dsn_is_one_line() -> None:
    env = {**os.environ, "SENTRY_DSN": "not a url"}
    result = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode == 2
    assert result.stderr.startswith("configuration error: SENTRY_DSN: ")
