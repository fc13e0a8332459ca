"""Load generators of ``bench/run.py``: wrk at saturation (``updates.lua``), a fixed-rate
generator for latency at a given rate, and a closed-loop one where wrk is missing.

The fixed-rate generator sends request ``i`` at ``start + i / rate`` whatever happened to the
ones before, over a pool of keep-alive connections, and measures each latency from that
intended send time, so a stalled server shows in the latency of every request it delayed
(no coordinated omission, as wrk2 does it). The bodies are the same shapes as ``updates.lua``.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

LUA = Path(__file__).with_name("updates.lua")
TEXTS = [
    "hello world",
    "coffee and the weather today",
    "small talk about the day",
    "did anyone see the match yesterday",
    "ok",
    "see you all tomorrow morning then",
]
BOT_ID = 123456789
# A fixed-rate run stops sending once this many seconds of requests are waiting for answers:
# the server is overloaded at that rate, and waiting for the whole queue to drain says no more.
BACKLOG_SECONDS = 2.0


@dataclass(frozen=True)
class Load:
    """What to send: ``kind`` of update, ids from ``first``; ``users`` spreads group senders.
    A callback presses a button on the owner's message ``first_message + n`` (wrk's thread t:
    ``first_message + t * users + n``), each press on a message of its own as Telegram refuses
    an edit to the same content; past ``users`` presses it goes round again, switching between
    two panel views."""

    kind: str
    first: int
    users: int
    owner: int
    secret: str
    first_message: int = 1


@dataclass(frozen=True)
class Outcome:
    requests: int
    seconds: float
    errors: int
    p50_ms: float
    p99_ms: float
    tool: str
    overloaded: bool = False  # a fixed-rate run stopped sending at BACKLOG_SECONDS behind

    @property
    def rate(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0


def body(load: Load, n: int) -> bytes:
    """The ``n``-th update of ``load`` (the same shape as updates.lua's)."""
    uid, now = load.first + n, int(time.time())
    if load.kind == "group":
        chat, user = -1001 - uid % 5, 1 + uid % load.users
        update = {
            "update_id": uid,
            "message": {
                "message_id": uid,
                "date": now,
                "chat": {"id": chat, "type": "supergroup", "title": "Bench group"},
                "from": {"id": user, "is_bot": False, "first_name": f"Member {user}"},
                "text": TEXTS[uid % len(TEXTS)],
            },
        }
    elif load.kind == "start":
        user = 2_000_000_000 + uid % 100_000_000
        update = {
            "update_id": uid,
            "message": {
                "message_id": uid,
                "date": now,
                "chat": {"id": user, "type": "private", "first_name": "User"},
                "from": {"id": user, "is_bot": False, "first_name": "User"},
                "text": "/start",
                "entities": [{"type": "bot_command", "offset": 0, "length": 6}],
            },
        }
    else:  # one message a press, then round again with the other view (see Load)
        owner = {"id": load.owner, "is_bot": False, "first_name": "Owner"}
        view = "panel:admins" if n // (2 * load.users) % 2 == 0 else "panel:home"
        update = {
            "update_id": uid,
            "callback_query": {
                "id": f"cb{uid}",
                "chat_instance": "1",
                "data": view,
                "from": owner,
                "message": {
                    "message_id": load.first_message + n % (2 * load.users),
                    "date": now,
                    "chat": {"id": load.owner, "type": "private", "first_name": "Owner"},
                    "from": {"id": BOT_ID, "is_bot": True, "first_name": "Bench bot"},
                    "text": "Admin panel",
                },
            },
        }
    return json.dumps(update).encode()


def saturate(url: str, load: Load, seconds: float, connections: int = 16) -> Outcome:
    """Throughput at saturation: wrk when installed, else the closed-loop generator."""
    wrk = shutil.which("wrk")
    if wrk is None:
        return asyncio.run(_closed_loop(url, load, seconds, connections))
    argv = [
        wrk,
        "-t2",
        f"-c{connections}",
        f"-d{max(1, round(seconds))}s",
        "--latency",
        "-s",
        str(LUA),
        url,
        "--",
        load.kind,
        str(load.first),
        str(load.users),
        str(load.owner),
        load.secret,
        str(load.first_message),
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 60, check=False)
    found = re.search(r"^BENCH (\{.*\})$", done.stdout, re.MULTILINE)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"wrk failed ({done.returncode}): {done.stderr or done.stdout}")
    figures = json.loads(found.group(1))
    return Outcome(tool="wrk", **figures)


def fixed_rate(url: str, load: Load, rate: float, seconds: float, connections: int = 64) -> Outcome:
    """Latency at ``rate`` requests per second, from each request's intended send time."""
    return asyncio.run(_fixed_rate(url, load, rate, seconds, connections))


async def _fixed_rate(url: str, load: Load, rate: float, seconds: float, limit: int) -> Outcome:
    pool = _Pool(url, limit)
    total = max(1, int(rate * seconds))
    latencies: list[float] = []
    errors = 0
    loop = asyncio.get_running_loop()
    start = loop.time() + 0.05
    overloaded = False

    async def one(n: int, intended: float) -> None:
        nonlocal errors
        try:
            status = await pool.post(body(load, n), load.secret)
        except (OSError, asyncio.IncompleteReadError, ValueError):
            status = 0
        errors += status != 200
        latencies.append(loop.time() - intended)

    tasks = []
    for n in range(total):
        if n - len(latencies) > rate * BACKLOG_SECONDS:
            overloaded = True
            break
        intended = start + n / rate
        delay = intended - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(n, intended)))
    await asyncio.gather(*tasks)
    elapsed = loop.time() - start
    await pool.close()
    return _outcome(latencies, elapsed, errors, "fixed-rate", overloaded)


async def _closed_loop(url: str, load: Load, seconds: float, connections: int) -> Outcome:
    pool = _Pool(url, connections)
    latencies: list[float] = []
    errors = 0
    loop = asyncio.get_running_loop()
    start = loop.time()
    deadline = start + seconds
    counter = iter(range(10**9))

    async def client() -> None:
        nonlocal errors
        while loop.time() < deadline:
            sent = loop.time()
            try:
                status = await pool.post(body(load, next(counter)), load.secret)
            except (OSError, asyncio.IncompleteReadError, ValueError):
                status = 0
            errors += status != 200
            latencies.append(loop.time() - sent)

    await asyncio.gather(*(client() for _ in range(connections)))
    elapsed = loop.time() - start
    await pool.close()
    return _outcome(latencies, elapsed, errors, "closed-loop")


def _outcome(
    latencies: list[float], seconds: float, errors: int, tool: str, overloaded: bool = False
) -> Outcome:
    ordered = sorted(latencies) or [0.0]

    def pick(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000

    return Outcome(len(latencies), seconds, errors, pick(0.50), pick(0.99), tool, overloaded)


class _Pool:
    """Keep-alive HTTP/1.1 connections to one host, opened as needed up to ``limit``."""

    def __init__(self, url: str, limit: int) -> None:
        found = re.fullmatch(r"http://([^:/]+):(\d+)(/.*)", url)
        if found is None:
            raise ValueError(f"not an http://host:port/path URL: {url}")
        self.host, self.port, self.path = found.group(1), int(found.group(2)), found.group(3)
        self.limit, self.opened = limit, 0
        self.idle: asyncio.Queue[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = (
            asyncio.Queue()
        )
        self.all: list[asyncio.StreamWriter] = []
        self.headers: dict[str, str] = {}

    async def post(self, payload: bytes, secret: str) -> int:
        if self.idle.empty() and self.opened < self.limit:
            self.opened += 1
            reader, writer = await asyncio.open_connection(self.host, self.port)
            self.all.append(writer)
        else:
            reader, writer = await self.idle.get()
        head = (
            f"POST {self.path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            "Content-Type: application/json\r\n"
            f"X-Telegram-Bot-Api-Secret-Token: {secret}\r\n"
            f"Content-Length: {len(payload)}\r\n\r\n"
        )
        writer.write(head.encode() + payload)
        status_line = await reader.readline()
        if not status_line:
            raise ConnectionResetError("connection closed")
        length, close = 0, False
        while (line := await reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            if name.lower() == "content-length":
                length = int(value)
            elif name.lower() == "connection" and value.strip().lower() == "close":
                close = True
        await reader.readexactly(length)
        if close:
            writer.close()
            self.opened -= 1
        else:
            self.idle.put_nowait((reader, writer))
        return int(status_line.split()[1])

    async def close(self) -> None:
        for writer in self.all:
            writer.close()
