"""The ``soak`` part of ``bench/run.py``: what one group message costs (issue 45 item 2).

The product (``manage.py serve``, the default web server, 2 processes, and the worker cluster)
is fed group messages at a fixed rate, phase after phase, each phase a community of its own
(its own chat ids and sender ids, so every key and row it makes is new to it): the main soak
(10 chats, 10,000 members, 60,000 messages) and phases that change one thing at a time: 1 and
100 chats, 1,000 and 100,000 members, and the message text stored in the buffer. Members are
distinct senders, spread evenly over the chats; message ``n`` comes from sender ``n % members``.

Per phase, divided by the messages answered 200:

- Redis: ``INFO memory`` ``used_memory`` and ``DBSIZE`` before and after; ``INFO cpu``
  ``used_cpu_user + used_cpu_sys``. Redis is a redis-server of the part's own
  (``harness.private_redis``), so nothing else moves these.
- PostgreSQL: ``pg_total_relation_size`` (table, indexes and TOAST) of every ``stats_`` table
  and of the whole database, after the write-behind has added every message (the part waits
  for the table's message count to reach the messages answered); rows added to
  ``stats_daily_user``. CPU: the backends of the soak's database (``pg_stat_activity``'s pids,
  ``/proc/<pid>/stat`` utime + stime; a backend that ended during the phase is left out, one
  that started counts whole). PostgreSQL's own background processes (WAL writer,
  checkpointer, autovacuum) serve every database of the server and are not counted;
  pg_stat_statements is not loaded on the shared server.
- The server: CPU of the web processes and of the worker cluster (``/proc``).

After the main soak, Redis's keys are grouped by shape (digits as ``#``) with their count per
message, their size (``MEMORY USAGE`` of a sample) and their TTL: what the sizing guide in
``docs/operations.md`` multiplies by a day's messages and each key's lifetime.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import statistics
import time
from collections import Counter
from dataclasses import dataclass

import psycopg
import redis

from bench import harness, serving
from bench.harness import SECRET, Server, Session
from bench.load import TEXTS, _Pool
from bench.report import Row, Section

RATE = 500  # messages a second offered; a phase that falls behind sends as fast as answered
CONNECTIONS = 32
FLUSH_WAIT_SECONDS = 60  # for the write-behind to add a phase's last messages


@dataclass(frozen=True)
class Phase:
    label: str
    chats: int
    members: int
    messages: int
    store_text: bool = False
    layout: str = "compact"  # STATE_KEY_LAYOUT: "legacy" is the baseline before issue 45 item 1


def baseline(quick: bool) -> Phase:
    """The main soak with the key layout before issue 45 item 1 (``STATE_KEY_LAYOUT=legacy``):
    the same run's before, beside the main soak's after."""
    main = 3_000 if quick else 60_000
    return Phase("main soak, legacy key layout (before)", 10, 10_000, main, layout="legacy")


def phases(quick: bool) -> list[Phase]:
    main, other = (3_000, 1_000) if quick else (60_000, 30_000)
    return [
        Phase("main soak: 10 chats, 10,000 members", 10, 10_000, main),
        Phase("1 chat, 10,000 members", 1, 10_000, other),
        Phase("100 chats, 10,000 members", 100, 10_000, other),
        Phase("10 chats, 1,000 members", 10, 1_000, other),
        Phase("10 chats, 100,000 members", 10, 100_000, other),
        Phase("10 chats, 10,000 members, message text stored", 10, 10_000, other, True),
    ]


@dataclass
class Snapshot:
    redis_bytes: int
    redis_keys: int
    redis_cpu: float
    pg_tables: dict[str, int]
    pg_database: int
    pg_rows: int
    pg_cpu: dict[int, float]
    server_cpu: float
    worker_cpu: float
    at: float


@dataclass
class Sent:
    answered: int
    errors: int
    seconds: float
    p99_ms: float


def body(phase_index: int, phase: Phase, n: int, update_id: int) -> bytes:
    """Message ``n`` of a phase: chat ``n % chats`` and sender ``n % members`` of the
    phase's own ranges (chat ids -1001 - 1000 * phase - c; sender ids phase * 10**6 + 1 + u).
    Message ids count up in each chat, as Telegram's do in a supergroup (every phase's
    ``chats`` divides its ``members``, so message ``n`` is the chat's ``n // chats + 1``-th)."""
    sender = phase_index * 1_000_000 + 1 + n % phase.members
    chat = -1001 - 1000 * phase_index - n % phase.members % phase.chats
    update = {
        "update_id": update_id,
        "message": {
            "message_id": n // phase.chats + 1,
            "date": int(time.time()),
            "chat": {"id": chat, "type": "supergroup", "title": "Soak group"},
            "from": {"id": sender, "is_bot": False, "first_name": f"Member {sender}"},
            "text": TEXTS[n % len(TEXTS)],
        },
    }
    return json.dumps(update).encode()


async def _send(url: str, phase_index: int, phase: Phase, first_id: int, rate: float) -> Sent:
    """Every message of the phase, the ``n``-th sent at ``start + n / rate`` or as soon as a
    connection is free after it: never given up, so every phase sends all its messages."""
    pool = _Pool(url, CONNECTIONS)
    loop = asyncio.get_running_loop()
    start = loop.time()
    latencies: list[float] = []
    errors = 0
    free = asyncio.Semaphore(CONNECTIONS)

    async def one(n: int, intended: float) -> None:
        nonlocal errors
        try:
            payload = body(phase_index, phase, n, first_id + n)
            status = await pool.post(payload, SECRET)
        except (OSError, asyncio.IncompleteReadError, ValueError):
            status = 0
        finally:
            free.release()
        errors += status != 200
        latencies.append(loop.time() - intended)

    tasks = []
    for n in range(phase.messages):
        intended = start + n / rate
        if (delay := intended - loop.time()) > 0:
            await asyncio.sleep(delay)
        await free.acquire()
        tasks.append(asyncio.create_task(one(n, intended)))
    await asyncio.gather(*tasks)
    seconds = loop.time() - start
    await pool.close()
    ordered = sorted(latencies) or [0.0]
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] * 1000
    return Sent(phase.messages - errors, errors, seconds, p99)


def snapshot(server: Server, redis_url: str, database_url: str, chats: tuple[int, int]) -> Snapshot:
    kv = redis.Redis.from_url(redis_url)
    cpu = kv.info("cpu")
    with psycopg.connect(database_url, autocommit=True) as conn:
        tables: dict[str, int] = dict(
            conn.execute(
                "SELECT relname, pg_total_relation_size(oid) FROM pg_class "
                "WHERE relkind = 'r' AND relname LIKE 'stats\\_%'"
            ).fetchall()
        )
        database = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]  # type: ignore[index]
        rows = conn.execute(
            "SELECT count(*) FROM stats_daily_user WHERE chat_id BETWEEN %s AND %s", chats
        ).fetchone()[0]  # type: ignore[index]
        backends = [
            pid
            for (pid,) in conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid()"
            ).fetchall()
        ]
    return Snapshot(
        redis_bytes=int(kv.info("memory")["used_memory"]),
        redis_keys=int(kv.dbsize()),
        redis_cpu=float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"]),
        pg_tables=tables,
        pg_database=int(database),
        pg_rows=int(rows),
        pg_cpu={pid: harness.cpu_seconds([pid]) for pid in backends},
        server_cpu=harness.cpu_seconds(serving.web_pids(server)),
        worker_cpu=harness.cpu_seconds(serving.worker_pids(server)),
        at=time.monotonic(),
    )


def counted(database_url: str, chats: tuple[int, int]) -> int:
    with psycopg.connect(database_url, autocommit=True) as conn:
        return int(
            conn.execute(
                "SELECT COALESCE(sum(message_count), 0) FROM stats_daily_user "
                "WHERE chat_id BETWEEN %s AND %s",
                chats,
            ).fetchone()[0]  # type: ignore[index]
        )


def store_text(database_url: str, on: bool) -> None:
    """The statistics' one settings row (pk 1): message text kept in the buffer or not."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO stats_settings (id, store_message_text, profanity_enabled, "
            "extra_profanity, allowed_words, new_member_days, updated_at) "
            "VALUES (1, %s, true, '', '', 3, now()) "
            "ON CONFLICT (id) DO UPDATE SET store_message_text = EXCLUDED.store_message_text",
            (on,),
        )


def key_shapes(
    redis_url: str, messages: int, chats: tuple[int, int] | None = None, sample: int = 50
) -> list[tuple[str, float, float, str]]:
    """Redis's keys by shape (digit runs as ``#``): keys per message, mean bytes
    (``MEMORY USAGE`` of up to ``sample`` keys of the shape) and the TTL found; with
    ``chats``, only the keys naming a chat id in that range."""
    kv = redis.Redis.from_url(redis_url)
    shapes: Counter[str] = Counter()
    picked: dict[str, list[bytes]] = {}
    rng = random.Random(45)
    for key in kv.scan_iter(count=2000):
        if chats is not None and not _names_chat(key.decode(errors="replace"), chats):
            continue
        shape = re.sub(r"\d+", "#", key.decode(errors="replace"))
        shapes[shape] += 1
        kept = picked.setdefault(shape, [])
        if len(kept) < sample:
            kept.append(key)
        elif rng.random() < sample / shapes[shape]:
            kept[rng.randrange(sample)] = key
    found = []
    for shape, count in shapes.most_common():
        keys = picked[shape]
        sizes = [kv.memory_usage(k) or 0 for k in keys]
        ttls = [kv.pttl(k) for k in keys]
        found.append((shape, count / messages, statistics.mean(sizes), _ttl(ttls)))
    return found


def _names_chat(key: str, chats: tuple[int, int]) -> bool:
    return any(chats[0] <= int(found) <= chats[1] for found in re.findall(r"-\d+", key))


def _ttl(ttls: list[int]) -> str:
    living = [t for t in ttls if t > 0]
    if not living:
        return "none"
    seconds = max(living) / 1000
    if seconds >= 48 * 3600:
        return f"{seconds / 86400:.1f} d"
    return f"{seconds / 3600:.1f} h" if seconds >= 7200 else f"{seconds:.0f} s"


def part_soak(session: Session) -> Section:
    """Cost per message from a soak (see the module's docstring)."""
    session.stop_all()  # the other parts' servers would take CPU beside this one
    section = Section("soak", "Cost per message (soak, issue 45)")
    database = session.database("soak")
    first_id = (int(time.time()) % 100_000) * 10**10 + 5 * 10**9
    with harness.private_redis(session, "soak-redis") as redis_base:
        redis_url = f"{redis_base}/0"
        results = []
        # The before: the legacy key layout on a server of its own, then Redis emptied, so that
        # the after (the main soak below) starts from the same Redis.
        before = baseline(session.quick)
        index = len(phases(session.quick))
        legacy = {"STATE_KEY_LAYOUT": "legacy"}
        server = serving.serve(session, "soak-legacy", database, "2", "config.settings",
                               redis_url=redis_url, extra_env=legacy)  # fmt: skip
        warm = Phase("warm-up", 5, 1_000, 300 if session.quick else 2_000)
        warm_legacy = asyncio.run(
            _send(server.url(serving.GROUP_PATH), 98, warm, first_id - 10**8, RATE)
        )
        store_text(database, False)
        results.append(_phase(server, redis_url, database, index, before, first_id))
        messages = warm_legacy.answered + results[0][1].answered
        what = f"the warm-up and the {before.label}"
        section.details.append(shapes_detail(redis_url, messages, what))
        session.stop(server)
        redis.Redis.from_url(redis_url).flushdb()
        server = serving.serve(session, "soak", database, "2", "config.settings",
                               redis_url=redis_url)  # fmt: skip
        warmed = asyncio.run(_send(server.url(serving.GROUP_PATH), 99, warm, first_id, RATE))
        for index, phase in enumerate(phases(session.quick)):
            first_id += 10**8
            store_text(database, phase.store_text)
            if phase.store_text:
                time.sleep(6)  # the statistics' settings are cached 5 s in each process
            results.append(_phase(server, redis_url, database, index, phase, first_id))
            sent = results[-1][1]
            if index == 0:
                what = "the warm-up and the main soak"
                messages = warmed.answered + sent.answered
                section.details.append(shapes_detail(redis_url, messages, what))
            elif phase.store_text:
                chats = _chats(index, phase)
                what = f"the phase '{phase.label}' (keys naming its chats)"
                section.details.append(shapes_detail(redis_url, sent.answered, what, chats))
        store_text(database, False)
        session.stop(server)
    section.rows += cost_rows(results)
    section.details.append(table_detail(results))
    section.details.append(pg_detail(results[1]))
    section.notes += [
        f"Served by `manage.py serve` (the default web server, 2 processes, and the worker "
        f"cluster), PostgreSQL and a private redis-server (noeviction, no persistence). "
        f"Each phase sends its messages at {RATE}/s (or as fast as answered, over "
        f"{CONNECTIONS} connections) as a community of its own: its own chat and sender ids, "
        "so every key and row it makes is new. Members are distinct senders spread evenly "
        "over the chats; message n comes from sender n mod members.",
        "Per message: the change over the phase divided by the messages answered 200. Redis: "
        "INFO used_memory, DBSIZE, used_cpu_user + used_cpu_sys. PostgreSQL: "
        "pg_total_relation_size of every stats_ table (and pg_database_size), after the "
        "write-behind added every answered message; CPU of the soak database's backends from "
        "/proc/<pid>/stat (pg_stat_statements is not loaded on the shared server; the WAL "
        "writer, checkpointer and autovacuum serve every database and are not counted). "
        "Server: CPU of the web processes and the worker cluster.",
        "Nothing expires during a soak: the Redis figures are what a message adds until its "
        "keys' TTLs run out (the key table above gives each shape's TTL); at steady state "
        "Redis holds each shape's bytes per message x messages a day x its lifetime in days.",
        "Redis's used_memory moves in steps: when the key count passes a power of two, the "
        "key table and the expiry table double at once (about 32 MB for the pair at a million "
        "keys), so a phase that crosses one shows that step in its bytes per message; the "
        "key table (MEMORY USAGE) does not.",
    ]
    return section


def _chats(index: int, phase: Phase) -> tuple[int, int]:
    return (-1001 - 1000 * index - phase.chats + 1, -1001 - 1000 * index)


def _phase(
    server: Server, redis_url: str, database: str, index: int, phase: Phase, first_id: int
) -> tuple[Phase, Sent, Snapshot, Snapshot, float]:
    """One phase sent and measured: the snapshots before and after, and the wait for the
    write-behind to add its last message."""
    chats = _chats(index, phase)
    before = snapshot(server, redis_url, database, chats)
    sent = asyncio.run(_send(server.url(serving.GROUP_PATH), index, phase, first_id, RATE))
    waited = wait_counted(database, chats, sent.answered)
    after = snapshot(server, redis_url, database, chats)
    return phase, sent, before, after, waited


def wait_counted(database_url: str, chats: tuple[int, int], expected: int) -> float:
    started = time.monotonic()
    deadline = started + FLUSH_WAIT_SECONDS
    while time.monotonic() < deadline:
        if counted(database_url, chats) >= expected:
            break
        time.sleep(0.25)
    else:
        raise RuntimeError(
            f"the statistics counted {counted(database_url, chats)} of {expected} messages "
            f"{FLUSH_WAIT_SECONDS} s after the phase"
        )
    return time.monotonic() - started


def _per(value: float, messages: int) -> float:
    return value / max(messages, 1)


def _pg_cpu(before: Snapshot, after: Snapshot) -> float:
    return sum(spent - before.pg_cpu.get(pid, 0.0) for pid, spent in after.pg_cpu.items())


def cost_rows(results: list[tuple[Phase, Sent, Snapshot, Snapshot, float]]) -> list[Row]:
    rows = []
    for phase, sent, before, after, _ in results:
        n = sent.answered
        redis_bytes = _per(after.redis_bytes - before.redis_bytes, n)
        keys = _per(after.redis_keys - before.redis_keys, n)
        pg_bytes = _per(sum(after.pg_tables.values()) - sum(before.pg_tables.values()), n)
        server_ms = 1000 * _per(after.server_cpu - before.server_cpu, n)
        worker_ms = 1000 * _per(after.worker_cpu - before.worker_cpu, n)
        redis_ms = 1000 * _per(after.redis_cpu - before.redis_cpu, n)
        pg_ms = 1000 * _per(_pg_cpu(before, after), n)
        rows.append(
            Row(
                f"{phase.label}: per message ({n:,} messages)",
                f"Redis {redis_bytes:.0f} B, {keys:.2f} keys; PostgreSQL {pg_bytes:.0f} B",
                f"CPU ms: web {server_ms:.3f}, worker {worker_ms:.3f}, Redis {redis_ms:.3f}, "
                f"PostgreSQL {pg_ms:.3f}",
                summary=phase.layout == "legacy" or phase is results[1][0],
            )
        )
    return rows


def table_detail(results: list[tuple[Phase, Sent, Snapshot, Snapshot, float]]) -> str:
    head = (
        f"{'phase':<48}{'messages':>9}{'rate/s':>8}{'p99 ms':>8}{'Redis B':>9}{'keys':>6}"
        f"{'PG B':>7}{'PG rows':>8}{'web ms':>8}{'worker':>8}{'Redis':>7}{'PG':>7}"
    )
    lines = [head]
    for phase, sent, before, after, _ in results:
        n = sent.answered
        lines.append(
            f"{phase.label[:47]:<48}{n:>9,}{n / sent.seconds:>8.0f}{sent.p99_ms:>8.1f}"
            f"{_per(after.redis_bytes - before.redis_bytes, n):>9.0f}"
            f"{_per(after.redis_keys - before.redis_keys, n):>6.2f}"
            f"{_per(sum(after.pg_tables.values()) - sum(before.pg_tables.values()), n):>7.0f}"
            f"{_per(after.pg_rows - before.pg_rows, n):>8.3f}"
            f"{1000 * _per(after.server_cpu - before.server_cpu, n):>8.3f}"
            f"{1000 * _per(after.worker_cpu - before.worker_cpu, n):>8.3f}"
            f"{1000 * _per(after.redis_cpu - before.redis_cpu, n):>7.3f}"
            f"{1000 * _per(_pg_cpu(before, after), n):>7.3f}"
        )
    return (
        "Per message, each phase (Redis B: used_memory; keys: DBSIZE; PG B: stats_ tables "
        "with indexes and TOAST; PG rows: stats_daily_user rows added; CPU in ms: web "
        "processes, worker cluster, redis-server, the database's backends):\n" + "\n".join(lines)
    )


def pg_detail(result: tuple[Phase, Sent, Snapshot, Snapshot, float]) -> str:
    phase, sent, before, after, waited = result
    lines = [
        f"  {name:<32}{after.pg_tables[name] - before.pg_tables.get(name, 0):>12,} B"
        for name in sorted(after.pg_tables)
        if after.pg_tables[name] != before.pg_tables.get(name, 0)
    ]
    lines.append(f"  {'(whole database)':<32}{after.pg_database - before.pg_database:>12,} B")
    return (
        f"PostgreSQL growth over the {phase.label} ({sent.answered:,} messages; the last "
        f"added {waited:.1f} s after the phase's last answer):\n" + "\n".join(lines)
    )


def shapes_detail(
    redis_url: str, messages: int, what: str, chats: tuple[int, int] | None = None
) -> str:
    shapes = key_shapes(redis_url, messages, chats)
    lines = [f"  {'key shape':<56}{'per message':>12}{'bytes each':>12}{'TTL':>9}"]
    for shape, per_message, size, ttl in shapes[:25]:
        lines.append(f"  {shape[:55]:<56}{per_message:>12.3f}{size:>12.0f}{ttl:>9}")
    return (
        f"Redis keys of {what} ({messages:,} messages), by shape (digits as #; MEMORY USAGE "
        "of up to 50 of each):\n" + "\n".join(lines)
    )
