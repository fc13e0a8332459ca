"""Under ``WEB_SERVER=gunicorn``, its workers share the connections between them: each listens
on a socket of its own (``SO_REUSEPORT``), so the kernel spreads new connections over them.

With the one socket all workers accept from, whichever worker woke first took a connection,
and a busy worker wakes first: a load generator's 16 keep-alive connections all landed on
one of the two workers in 6 runs of 25, and served a third of the requests a second of an
even split (``bench``; Telegram's deliveries also come on a few long-lived connections). Real
processes: ``python -m config.web`` as the image runs it, on a throwaway SQLite database."""

from __future__ import annotations

import http.client
import os
import time
from collections import Counter
from pathlib import Path

import pytest

from telegram_bot.processes import descendants
from tests.ports import free_port
from tests.processes import kill_group, start_web, wait_until_healthy, web_env

LISTEN, ESTABLISHED = "0A", "01"


def sockets(port: int, state: str) -> set[int]:
    """The inodes of the IPv4 TCP sockets on local ``port`` in ``state`` (/proc/net/tcp)."""
    found = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == state:
            found.add(int(fields[9]))
    return found


def held(pid: int, inodes: set[int]) -> set[int]:
    """Which of ``inodes`` the process holds open."""
    found = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:[") and int(target[8:-1]) in inodes:
            found.add(int(target[8:-1]))
    return found


@pytest.mark.timeout(120)
def test_each_gunicorn_worker_listens_on_its_own_socket_and_takes_connections(
    tmp_path: Path,
) -> None:
    port = free_port()
    env = web_env(tmp_path, port, WEB_SERVER="gunicorn", WEB_CONCURRENCY="2", WEB_THREADS="2")
    web = start_web(env)
    connections: list[http.client.HTTPConnection] = []
    try:
        wait_until_healthy(port)
        deadline = time.monotonic() + 30
        while len(workers := descendants(web.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(workers) == 2
        listening = sockets(port, LISTEN)
        first, second = (held(pid, listening) for pid in workers)
        assert len(first) == len(second) == 1 and first != second  # a socket each...
        assert not held(web.pid, listening)  # ...and none the master shares with them

        for _ in range(32):  # keep-alive connections, each answered once and kept open
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            connection.request("GET", "/telegram/webhook")
            answer = connection.getresponse()
            answer.read()
            assert answer.status == 405
            connections.append(connection)
        established = sockets(port, ESTABLISHED)
        taken = Counter({pid: len(held(pid, established)) for pid in workers})
        assert sum(taken.values()) == 32
        assert min(taken.values()) > 0, taken  # all on one worker: about once in 2**31
    finally:
        for connection in connections:
            connection.close()
        kill_group(web)
