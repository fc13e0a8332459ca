"""A private redis-server for tests that must count its commands, stop it, or resize its table.

The shared Redis serves other developers (and other test runs): its INFO commandstats counts
everyone's commands, and its table holds everyone's keys. A test that counts commands, kills
the server or resizes its table starts its own server on a free loopback port.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import redis

from telegram_bot.errors import StateUnavailableError
from tests.ports import free_port

if TYPE_CHECKING:
    from telegram_bot.state import KVStore


def start_server(
    binary: str, port: int, workdir: Path, *, persistent: bool = False
) -> subprocess.Popen[bytes]:
    """redis-server on 127.0.0.1:``port``, without persistence (``persistent``: every write
    in its append-only file before it answers, so that a kill -9 loses no answered write)."""
    if persistent:
        persistence = ["--save", "", "--appendonly", "yes", "--appendfsync", "always"]
    else:
        persistence = ["--save", "", "--appendonly", "no"]
    return subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", *persistence, "--dir", str(workdir)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


@contextmanager
def private_redis() -> Iterator[str]:
    """Start redis-server (no persistence) and yield its URL; stop it afterwards."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed")
    port = free_port()
    with tempfile.TemporaryDirectory() as workdir:
        process = start_server(binary, port, Path(workdir))
        url = f"redis://127.0.0.1:{port}/0"
        try:
            client = redis.Redis.from_url(url)
            for _ in range(200):
                try:
                    client.ping()
                    break
                except redis.ConnectionError:
                    time.sleep(0.05)
            else:
                raise RuntimeError("private redis-server did not start")
            client.close()
            yield url
        finally:
            process.terminate()
            process.wait(timeout=10)


def command_calls(client: redis.Redis) -> int:
    """Commands the server has run since its stats were reset, scripts' inner calls included
    (INFO and CONFIG themselves excluded)."""
    stats = client.info("commandstats")
    return sum(
        int(entry["calls"])
        for name, entry in stats.items()
        if name not in ("cmdstat_info", "cmdstat_config|resetstat", "cmdstat_config")
    )


class RedisServer:
    """A redis-server of a test's own, without persistence (unless ``persistent``), on
    127.0.0.1:``port``; ``restart`` kills it (-9) and starts one on the same port (empty,
    unless ``persistent``); ``freeze`` and ``thaw`` stop and continue it (SIGSTOP, SIGCONT):
    a hung server, whose sockets still accept what clients send."""

    def __init__(self, port: int, workdir: Path, *, persistent: bool = False) -> None:
        self.port, self.workdir, self.persistent = port, workdir, persistent
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = start_server(
            "redis-server", self.port, self.workdir, persistent=self.persistent
        )

    def freeze(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)

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
