"""Helpers for the tests that start real processes (servers, the worker) of their own."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

from telegram_bot.errors import StateUnavailableError

if TYPE_CHECKING:
    from telegram_bot.state import KVStore


def wait_until_healthy(port: int, timeout: float = 60) -> None:
    """Return once ``/healthz`` on the loopback ``port`` answers 200, or after ``timeout``
    seconds (the test's own requests then fail and say why)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):
                return
        except OSError:  # not listening yet, or not 200 (HTTPError is an OSError)
            time.sleep(0.2)


def kill_group(process: subprocess.Popen[bytes] | subprocess.Popen[str]) -> None:
    """SIGKILL the process group ``process`` leads (started with ``start_new_session``) if it
    is still running, and reap it: a failed test leaves no server behind."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


class RedisServer:
    """A redis-server of a test's own (never the shared one), without persistence, on
    127.0.0.1:``port``; ``restart`` kills it (-9) and starts an empty one on the same port."""

    def __init__(self, port: int, workdir: Path) -> None:
        self.port, self.workdir = port, workdir
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.workdir),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def restart(self) -> None:
        self.kill()
        self.start()


def wait_redis_ready(store: KVStore) -> None:
    """Return once ``store`` answers a ping (20 s at most)."""
    deadline = time.monotonic() + 20
    while True:
        try:
            store.ping()
            return
        except StateUnavailableError:
            assert time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.05)
