"""A private redis-server for tests that must count its commands or stop it.

The shared Redis serves other developers (and other test runs): its INFO commandstats counts
everyone's commands. A test that counts commands starts its own server on a free loopback port.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import redis


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def private_redis() -> Iterator[str]:
    """Start redis-server (no persistence) and yield its URL; stop it afterwards."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed")
    port = _free_port()
    with tempfile.TemporaryDirectory() as workdir:
        process = subprocess.Popen(
            [
                binary,
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                workdir,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
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
