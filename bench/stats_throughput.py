"""Throughput of statistics: messages counted per second through the webhook, and backfill
keys per second, each next to a baseline measured in the same run. Ratios, never assertions.
Then what reading costs: the text of /stats (this week) and a 366-day dashboard report, with
``--unrelated`` other keys in the store (buffer entries of another chat), in time and in KV
calls (scan pages and gets; on Redis every scan page is a SCAN MATCH over the whole keyspace).

    python bench/stats_throughput.py [--messages 2000] [--kv memory|db|redis] [--seed 1]
                                     [--unrelated 20000]
    python -m bench.stats_throughput ...

Database: the test runner's set-up (``create_test_db``) under ``config.settings_test``: a
fresh SQLite file by default, ``test_<name>`` on PostgreSQL when ``DATABASE_URL`` points there;
dropped at the end. KV store: ``memory`` (default), ``db`` (the ``kv_store`` table, the
embedded default) or ``redis`` (``REDIS_URL``, keys under a private prefix, removed after).

Baselines:
- webhook: the same messages through the same webhook and pipeline, routed to a no-op handler
  (``bench/noop_handlers.py``): parse, claim, route, done-marker. The ratio is what counting
  (one atomic KV commit + one additive upsert) costs on top.
- backfill: a bare walk of the same counter keys (scan + one get per key), no SQL. The ratio
  is what the bounded, fenced, absolute writes cost on top of reading.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings_test")

TEXT = ["hello", "world", "coffee", "weather", "fuuuck", "sh1t", "привет", "хуй", "small",
        "talk", "about", "the", "day"]  # fmt: skip
SECRET_HEADER = "HTTP_X_TELEGRAM_BOT_API_SECRET_TOKEN"  # noqa: S105 - a header name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--kv", choices=("memory", "db", "redis"), default="memory")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--unrelated", type=int, default=20_000)
    args = parser.parse_args()

    import django

    django.setup()
    from django.db import connection
    from django.test.utils import setup_test_environment, teardown_test_environment

    setup_test_environment()
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    store = open_kv(args.kv)
    try:
        run(args, store)
    finally:
        cleanup_kv(store)
        connection.creation.destroy_test_db(old_name, verbosity=0)
        teardown_test_environment()


def run(args: argparse.Namespace, store: Any) -> None:
    from django.db import connection

    from stats.backfill import backfill_run
    from telegram_bot.state import override_store

    rng = random.Random(args.seed)
    with override_store(store):
        baseline = webhook_rate(make_updates(rng, args.messages, 1), ["bench.noop_handlers"])
        counting = webhook_rate(make_updates(rng, args.messages, 2), None)
        walk_keys, walk_seconds = kv_walk(store)
        started = time.perf_counter()
        report = backfill_run(owner="bench", store=store, force=True)
        backfill_seconds = time.perf_counter() - started
    walk_rate = walk_keys / walk_seconds
    backfill_rate = report.keys / backfill_seconds
    print(
        f"stats throughput: {connection.vendor}, KV {args.kv}, {args.messages} messages "
        f"over 7 days in 5 chats (seed {args.seed})"
    )
    print(f"  webhook, no-op handler (baseline)   {baseline:9.0f} messages/s")
    print(f"  webhook, stats counting             {counting:9.0f} messages/s"
          f"   ratio {counting / baseline:.2f} of baseline")  # fmt: skip
    print(f"  KV walk, scan + get (baseline)      {walk_rate:9.0f} keys/s ({walk_keys} keys)")
    print(f"  backfill daily_aggregates_v1        {backfill_rate:9.0f} keys/s"
          f"   ratio {backfill_rate / walk_rate:.2f} of baseline"
          f" ({report.keys} keys, {report.slices} slices, {report.outcome})")  # fmt: skip
    for line in read_cost(store, args.unrelated):
        print(line)


def read_cost(store: Any, unrelated: int) -> list[str]:
    """Time and KV calls of /stats's text and of a 366-day report, with unrelated keys."""
    from datetime import timedelta

    from stats.selectors import stats_report, utc_today
    from stats.summary import group_summary_text

    for n in range(unrelated):
        store.set(f"msg:-1999:{1_700_000_000 + n}:{n}", {"u": 1, "k": "text", "w": 1}, 600_000)
    calls = {"scans": 0, "gets": 0}
    scan, get = store._scan, store._get

    def counted_scan(*args: Any) -> Any:
        calls["scans"] += 1
        return scan(*args)

    def counted_get(*args: Any) -> Any:
        calls["gets"] += 1
        return get(*args)

    store._scan, store._get = counted_scan, counted_get
    today, lines = utc_today(), []
    try:
        reads = {
            "/stats text (this week)": lambda: group_summary_text(chat_id=-1001, store=store),
            "dashboard report, 366 days": lambda: stats_report(
                chat_id=-1001, start=today - timedelta(days=365), end=today, store=store
            ),
        }
        for name, read in reads.items():
            calls.update(scans=0, gets=0)
            started = time.perf_counter()
            read()
            ms = (time.perf_counter() - started) * 1000
            lines.append(f"  read {name:<29} {ms:9.1f} ms, {calls['scans']} scan pages, "
                         f"{calls['gets']} gets ({unrelated} unrelated keys)")  # fmt: skip
    finally:
        del store._scan, store._get
    return lines


def webhook_rate(updates: list[dict[str, Any]], handler_modules: list[str] | None) -> float:
    """Messages per second through the webhook view with these handler modules (None: the
    installed apps' handlers)."""
    from django.conf import settings
    from django.test import Client

    from telegram_bot.pipeline import router

    client = Client()
    router._router = router.build_router(handler_modules) if handler_modules else None
    bodies = [json.dumps(update) for update in updates]
    started = time.perf_counter()
    for body in bodies:
        response = client.post(
            "/telegram/webhook",
            data=body,
            content_type="application/json",
            **{SECRET_HEADER: settings.TELEGRAM_WEBHOOK_SECRET},
        )
        if response.status_code != 200:
            raise SystemExit(f"webhook answered {response.status_code}: {response.content!r}")
    seconds = time.perf_counter() - started
    router._router = None
    return len(updates) / seconds


def kv_walk(store: Any) -> tuple[int, float]:
    """Read every counter key the way the backfill walks them, without writing anything."""
    from stats import keys

    count = 0
    started = time.perf_counter()
    for family in keys.COUNTER_FAMILIES:
        cursor = None
        while True:
            page, cursor = store.scan(family, cursor, 50)
            for key in page:
                store.get(key)
            count += len(page)
            if cursor is None:
                break
    return count, time.perf_counter() - started


def make_updates(rng: random.Random, count: int, batch: int) -> list[dict[str, Any]]:
    now = int(time.time())
    updates = []
    for n in range(count):
        ts = now - rng.randint(0, 7 * 86400)
        chat_id, user_id = -1000 - rng.randint(1, 5), rng.randint(1, 60)
        message: dict[str, Any] = {
            "message_id": batch * 1_000_000 + n,
            "date": ts,
            "chat": {"id": chat_id, "type": "supergroup", "title": f"Group {chat_id}"},
            "from": {"id": user_id, "is_bot": False, "first_name": f"User{user_id}"},
        }
        roll = rng.random()
        if roll < 0.15:
            message["voice"] = {"file_id": "v", "file_unique_id": "v", "duration": 12}
        elif roll < 0.25:
            message["video_note"] = {"file_id": "n", "file_unique_id": "n", "length": 240,
                                     "duration": 9}  # fmt: skip
        else:
            message["text"] = " ".join(rng.choice(TEXT) for _ in range(rng.randint(1, 12)))
        updates.append({"update_id": batch * 1_000_000 + n, "message": message})
    return updates


def open_kv(kind: str) -> Any:
    from telegram_bot.state import open_store

    if kind == "redis":
        url = os.environ.get("REDIS_URL")
        if not url:
            raise SystemExit("--kv redis needs REDIS_URL")
        return open_store(url, prefix=f"bench{uuid.uuid4().hex[:8]}:")
    return open_store(f"{kind}://")


def cleanup_kv(store: Any) -> None:
    client = getattr(store, "client", None)
    if client is not None:  # Redis: remove this run's keys
        for key in client.scan_iter(match=f"{store.prefix}*", count=500):
            client.delete(key)
        store.close()


if __name__ == "__main__":
    main()
