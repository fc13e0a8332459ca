"""The statistics dashboard's reads for a year of a large chat, next to a ``COUNT(*)`` over the
same rows measured in the same run. Ratios and query counts, never assertions.

    DATABASE_URL=postgres://... python bench/dashboard.py [--days 365] [--users 2000]
                                                         [--repeat 5] [--zone UTC] [--plans]

Seeds ``--days`` x ``--users`` rows of ``stats_daily_user`` for one chat with ``COPY`` (every
member active every day, messages spread over the hours), every day's coverage complete, the
verified days' read totals stored as finalize stores them (``stats.totals``; not with
``--no-totals``), and names for every member; then times, in process (server time, no HTTP):

- ``COUNT(*)`` of the chat's rows in the range (the baseline);
- ``GET /api/v1/stats/report`` (days, top 50 members, previous period, growth, heat maps);
- ``GET /api/v1/stats/daily``, ``GET /api/v1/stats/members?offset=1000`` and
  ``GET /api/v1/stats/hours``;
- ``GET /admin/stats/`` (the page: form and chat list; the browser then calls the report).

Each figure is the median of ``--repeat`` runs after one warm-up, with its SQL query count.
``--zone`` sets the chat's time zone (``Europe/Moscow``: every stored day is split into two
local days). ``--plans`` prints ``EXPLAIN ANALYZE`` of the aggregate queries. Needs
PostgreSQL (``DATABASE_URL``); the database is the test runner's ``test_<name>``, dropped at
the end.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings_test")

CHAT = -1001234567890
# Messages by UTC hour over a day, a chat's daily rhythm.
RHYTHM = [1, 1, 1, 1, 1, 2, 3, 5, 7, 8, 8, 8, 9, 9, 8, 8, 8, 9, 10, 10, 9, 6, 3, 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--users", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--zone", default="UTC")
    parser.add_argument("--plans", action="store_true")
    parser.add_argument(
        "--no-totals",
        action="store_true",
        help="leave the verified days without their stored totals (the rows are summed)",
    )
    args = parser.parse_args()

    import django

    django.setup()
    from django.db import connection
    from django.test.utils import setup_test_environment, teardown_test_environment

    if connection.vendor != "postgresql":
        sys.exit("bench/dashboard.py needs PostgreSQL: set DATABASE_URL")
    setup_test_environment()
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        run(args)
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
        teardown_test_environment()


def seed(days: int, users: int, zone: str, *, verified: bool = True) -> None:
    from django.db import connection

    from stats.member_months import month_fill
    from stats.models import CATEGORIES, ChatUserProfile, DailyCoverage, StatsChat
    from stats.selectors import utc_today
    from stats.totals import day_totals_write
    from telegram_bot.models import ChatPreference

    rng = random.Random(1)
    templates = []
    for _ in range(64):
        hours = [0] * 24
        for _ in range(rng.randint(1, 12)):
            hours[rng.choices(range(24), RHYTHM)[0]] += 1
        messages = sum(hours)
        templates.append(
            "\t".join(
                str(v)
                for v in (
                    messages,
                    messages * rng.randint(2, 9),
                    rng.randint(0, 1),
                    rng.randint(0, 60),
                    0,
                    0,
                    rng.randint(0, 1),
                    0,
                    0,
                    0,
                    *hours,
                )
            )
        )
    today = utc_today()
    first = today - timedelta(days=days - 1)
    columns = (
        "chat_id, day, user_id, message_count, word_count, voice_count, voice_seconds, "
        "video_note_count, video_note_seconds, profanity_count, violations_low, "
        "violations_medium, violations_high, "
        + ", ".join(f"hour_{h:02d}" for h in range(24))
        + ", updated_at"
    )
    started = time.perf_counter()
    with connection.cursor() as cursor:
        raw = cursor.cursor
        with raw.copy(f"COPY stats_daily_user ({columns}) FROM STDIN") as copy:
            for n in range(days):
                day = (first + timedelta(days=n)).isoformat()
                lines = [
                    f"{CHAT}\t{day}\t{user}\t{templates[(user * 7 + n) % 64]}\t{day} 23:59:59+00\n"
                    for user in range(1, users + 1)
                ]
                copy.write("".join(lines))
        cursor.execute("VACUUM ANALYZE stats_daily_user")
    seconds = time.perf_counter() - started
    DailyCoverage.objects.bulk_create(
        DailyCoverage(chat_id=CHAT, day=first + timedelta(days=n), category=c, status="complete")
        for n in range(days - 1)  # today stays live
        for c in CATEGORIES
    )
    ChatUserProfile.objects.bulk_create(
        ChatUserProfile(chat_id=CHAT, user_id=u, display_name=f"Member {u}")
        for u in range(1, users + 1)
    )
    StatsChat.objects.create(chat_id=CHAT, title="Bench group")
    ChatPreference.objects.create(chat_id=CHAT, time_zone=zone)
    print(f"  seeded {days * users} rows with COPY in {seconds:.1f} s")
    if verified:  # what finalize stores when it verifies a day complete
        started = time.perf_counter()
        with connection.cursor() as cursor:
            for n in range(days - 1):
                day_totals_write(cursor, CHAT, first + timedelta(days=n))
        seconds = time.perf_counter() - started
        print(f"  stored the totals of {days - 1} verified days in {seconds:.1f} s")
        started = time.perf_counter()
        months = month_fill()
        seconds = time.perf_counter() - started
        print(f"  stored the member sums of {months} closed months in {seconds:.1f} s")


def timed(call: Callable[[], Any], repeat: int) -> tuple[float, int]:
    """Median milliseconds of ``repeat`` calls after a warm-up, and the queries of one."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    call()
    runs = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        runs.append((time.perf_counter() - started) * 1000)
    with CaptureQueriesContext(connection) as queries:
        call()
    return statistics.median(runs), len(queries)


def run(args: argparse.Namespace) -> None:
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client

    from stats.selectors import chat_today
    from telegram_bot.models import chat_zone
    from telegram_bot.state import open_store, override_store

    print(
        f"dashboard: PostgreSQL {connection.pg_version // 10000}, {args.days} days x "
        f"{args.users} members, zone {args.zone}, median of {args.repeat}"
    )
    seed(args.days, args.users, args.zone, verified=not args.no_totals)
    user = get_user_model().objects.create_superuser("bench", "bench@example.org", "x")
    client = Client()
    client.force_login(user)
    today = chat_today(chat_zone(CHAT))
    start = today - timedelta(days=args.days - 1)
    query = {"chat_id": CHAT, "start": start.isoformat(), "end": today.isoformat()}

    def count() -> None:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT COUNT(*) FROM stats_daily_user WHERE chat_id = %s AND day >= %s "
                "AND day <= %s",
                [CHAT, start - timedelta(days=1), today],
            )
            cursor.fetchone()

    def get(path: str, **extra: Any) -> Callable[[], None]:
        def call() -> None:
            response = client.get(path, {**query, **extra})
            assert response.status_code == 200, response.content[:300]

        return call

    with override_store(open_store("memory://")):
        baseline, _ = timed(count, args.repeat)
        print(f"  COUNT(*) of the range (baseline)   {baseline:8.1f} ms")
        for name, call in (
            ("GET /api/v1/stats/report", get("/api/v1/stats/report")),
            ("GET /api/v1/stats/daily", get("/api/v1/stats/daily")),
            ("GET /api/v1/stats/members page 21", get("/api/v1/stats/members", offset=1000)),
            ("GET /api/v1/stats/hours", get("/api/v1/stats/hours")),
            ("GET /admin/stats/ (the page)", get("/admin/stats/")),
        ):
            ms, queries = timed(call, args.repeat)
            print(f"  {name:<34} {ms:8.1f} ms  {ms / baseline:5.1f}x baseline  {queries} queries")
        if args.plans:
            plans(query)


def plans(query: dict[str, Any]) -> None:
    """EXPLAIN ANALYZE of the report's aggregate queries."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from stats.selectors import stats_report
    from telegram_bot.state import get_store

    with CaptureQueriesContext(connection) as queries:
        report = stats_report(
            chat_id=CHAT,
            start=date.fromisoformat(query["start"]),
            end=date.fromisoformat(query["end"]),
            store=get_store(),
        )
        report.member_page(50)
    with connection.cursor() as cursor:
        for captured in queries.captured_queries:
            sql = captured["sql"]
            if "stats_daily_user" not in sql:
                continue
            cursor.execute("EXPLAIN ANALYZE " + sql)
            print("\n  " + sql[:160] + " ...")
            for (line,) in cursor.fetchall():
                print("    " + line)


if __name__ == "__main__":
    main()
