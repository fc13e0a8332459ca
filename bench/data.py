"""The database parts of ``bench/run.py``, run in a Django process of their own on the part's
database (``run.py`` starts it and reads the JSON section it prints):

- backfill: counter keys per second for a synthetic 30 days x 2,000 members x 5 chats (three
  counters a member-day: messages, words, one hour), with the daily totals finalize verifies,
  through ``stats.backfill.backfill_run`` as it is, against a plain ``COPY`` of the same rows
  into ``stats_daily_user``;
- dashboard: the stats API for one chat over 365 days with 2,000 members writing every day
  (730,000 rows, every day complete), the dashboard page and the admin index, each through the
  Django test client as a logged-in staff user, against a ``COUNT(*)`` over the same rows; with
  query counts and the plan of each one's slowest query;
- overview: the admin index (the overview's cards) and "Today by chat" with a year of 5 chats
  (365 days x 400 members writing every day each: 730,000 rows, and 20 joins and leaves a
  day in each chat), against a plain admin page (the password form) in the same run.

    python bench/data.py backfill|dashboard|overview [--quick]   (DATABASE_URL, REDIS_URL set)
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")

from bench.report import Row, Section, check

# A full backfill of the synthetic month takes about an hour today: it is sampled for this long.
BACKFILL_SECONDS = 120
HOUR_COLUMNS = [f"hour_{hour:02d}" for hour in range(24)]
COLUMNS = ["chat_id", "day", "user_id", "message_count", "word_count", *HOUR_COLUMNS]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=("backfill", "dashboard", "overview"))
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    import django

    django.setup()
    parts = {"backfill": backfill, "dashboard": dashboard, "overview": overview}
    section = parts[args.part](args.quick)
    print("SECTION " + json.dumps(dataclasses.asdict(section)))


def synthetic_rows(chats: list[int], days: list[date], users: int) -> list[tuple[Any, ...]]:
    """(chat, day, user, messages, words, hour) of every member-day."""
    rows = []
    for chat in chats:
        for n, day in enumerate(days):
            for user in range(1, users + 1):
                messages = 1 + (user * 7 + n) % 20
                rows.append((chat, day, user, messages, 3 * messages, (user + n) % 24))
    return rows


def copy_text(rows: list[tuple[Any, ...]]) -> bytes:
    out = io.StringIO()
    for chat, day, user, messages, words, hour in rows:
        hours = ["0"] * 24
        hours[hour] = str(messages)
        out.write(
            f"{chat}\t{day.isoformat()}\t{user}\t{messages}\t{words}\t" + "\t".join(hours) + "\n"
        )
    return out.getvalue().encode()


def copy_rows(data: bytes) -> float:
    """Seconds to COPY ``data`` into stats_daily_user, committed."""
    from django.db import connection, transaction

    sql = f"COPY stats_daily_user ({', '.join(COLUMNS)}) FROM STDIN"
    started = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cursor, cursor.copy(sql) as copy:
        copy.write(data)
    return time.perf_counter() - started


# -- backfill -------------------------------------------------------------------------------
def backfill(quick: bool) -> Section:
    from django.db import connection

    from stats import keys
    from stats.backfill import backfill_run
    from telegram_bot.state import get_store

    chats = [-1002001 - n for n in range(2 if quick else 5)]
    today = datetime.now(UTC).date()
    days = [today - timedelta(days=n) for n in range(1, (2 if quick else 30) + 1)]
    users = 50 if quick else 2000
    rows = synthetic_rows(chats, days, users)
    store = get_store()
    client = store.client  # type: ignore[attr-defined]
    ttl = 60 * 86_400_000
    seeded = 0
    pipe = client.pipeline(transaction=False)
    totals: dict[tuple[int, date], dict[str, int]] = {}
    for chat, day, user, messages, words, hour in rows:
        for key, value in (
            (keys.column_key("message_count", chat, day, user), messages),
            (keys.column_key("word_count", chat, day, user), words),
            (keys.column_key(f"hour_{hour:02d}", chat, day, user), messages),
        ):
            pipe.set(store.raw_name(key), value, px=ttl)  # the stored name: the bot's id in it
            seeded += 1
        day_totals = totals.setdefault((chat, day), {})
        for column, value in (
            ("message_count", messages),
            ("word_count", words),
            (f"hour_{hour:02d}", messages),
        ):
            day_totals[column] = day_totals.get(column, 0) + value
        if len(pipe) >= 5000:
            pipe.execute()
    for (chat, day), columns in totals.items():
        for column, value in columns.items():
            pipe.set(store.raw_name(keys.total_key(column, chat, day)), value, px=ttl)
    pipe.execute()

    copy_seconds = copy_rows(copy_text(rows))
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE stats_daily_user")
    calls = {"sql": 0, "redis": 0}
    execute_command = client.execute_command

    def count_sql(execute: Callable[..., Any], *args: Any) -> Any:
        calls["sql"] += 1
        return execute(*args)

    def count_redis(*args: Any, **options: Any) -> Any:
        calls["redis"] += 1
        return execute_command(*args, **options)

    client.execute_command = count_redis
    started = time.perf_counter()
    budget = None if quick else BACKFILL_SECONDS
    with connection.execute_wrapper(count_sql):
        report = backfill_run(owner="bench", store=store, force=True, max_seconds=budget)
    seconds = time.perf_counter() - started
    client.execute_command = execute_command
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*), coalesce(sum(message_count), 0) FROM stats_daily_user")
        written, messages_db = cursor.fetchone()
        cursor.execute(
            "SELECT status, count(*) FROM stats_daily_coverage "
            "WHERE category = 'messages' GROUP BY status ORDER BY status"
        )
        coverage = ", ".join(f"{status} {count}" for status, count in cursor.fetchall())
    expected = sum(row[3] for row in rows)
    copy_rate, rate = seeded / copy_seconds, report.keys / seconds
    ratio = rate / copy_rate
    outcome = report.outcome
    if report.outcome == "paused":
        whole = seeded / rate / 60
        outcome = (
            f"stopped after {BACKFILL_SECONDS} s in phase {report.phase}: the whole run "
            f"would take about {whole:,.0f} min"
        )
    section = Section("backfill", "Backfill")
    section.rows += [
        Row(
            "plain COPY of the same rows (baseline)",
            f"{len(rows) / copy_seconds:,.0f} rows/s = {copy_rate:,.0f} keys/s",
            f"{copy_seconds:.2f} s",
        ),
        Row(
            f"backfill, {len(days)} days x {users:,} members x {len(chats)} chats",
            f"{rate:,.0f} keys/s",
            f"{seconds:.1f} s, {report.keys:,} keys, {report.slices:,} slices, {outcome}; "
            f"per key {calls['sql'] / report.keys:.3f} SQL statements and "
            f"{calls['redis'] / report.keys:.3f} Redis commands",
        ),
        Row(
            "backfill / COPY",
            f"{ratio:.2g}x",
            "keys/s of the backfill / of COPY",
            ">= 0.15x",
            check(ratio, 0.15, below=False),
            summary=True,
        ),
    ]
    section.notes += [
        f"{len(rows):,} member-days, {seeded:,} counter keys (messages, words, one hour each) "
        "plus the daily totals finalize checks, written to Redis before the clock starts; the "
        "backfill walks them with its own SCANs over the Redis database.",
        f"After the backfill: {written:,} rows, {messages_db:,} messages "
        f"(seeded {expected:,}); messages coverage: {coverage or 'none'}.",
        "COPY: one `COPY stats_daily_user (...) FROM STDIN` of the same rows, text prepared "
        "beforehand, committed; then the table is emptied for the backfill.",
    ]
    return section


# -- dashboard ------------------------------------------------------------------------------
CHAT = -1003001


def dashboard(quick: bool) -> Section:
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import override_settings, setup_test_environment

    from stats.models import CATEGORIES, ChatUserProfile, DailyCoverage, StatsChat

    setup_test_environment()
    # The pages' {% static %} without collectstatic: plain storage, not the manifest.
    override_settings(
        STORAGES={
            **settings.STORAGES,
            "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
        }
    ).enable()
    days_n, users = (20, 50) if quick else (365, 2000)
    today = datetime.now(UTC).date()
    start = today - timedelta(days=days_n - 1)
    days = [start + timedelta(days=n) for n in range(days_n)]
    seed_seconds = copy_rows(copy_text(synthetic_rows([CHAT], days, users)))
    DailyCoverage.objects.bulk_create(
        [
            DailyCoverage(chat_id=CHAT, day=day, category=category, status="complete")
            for day in days
            for category in CATEGORIES
        ],
        batch_size=5000,
    )
    ChatUserProfile.objects.bulk_create(
        [
            ChatUserProfile(chat_id=CHAT, user_id=user, display_name=f"Member {user}")
            for user in range(1, users + 1)
        ],
        batch_size=5000,
    )
    StatsChat.objects.create(chat_id=CHAT, title="Bench chat", chat_type="supergroup")
    # The verified days' read totals, as finalize stores them when it verifies a day (today is
    # never verified: its rows are summed).
    from stats.member_months import month_fill
    from stats.totals import totals_fill

    totals_started = time.perf_counter()
    totals_days = totals_fill()
    totals_seconds = time.perf_counter() - totals_started
    # The member sums of the closed months, as finalize stores them once a month has closed.
    months_started = time.perf_counter()
    months_stored = month_fill()
    months_seconds = time.perf_counter() - months_started
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    staff = get_user_model().objects.create_superuser("bench", "bench@example.org", "x" * 20)
    client = Client()
    client.force_login(staff)

    section = Section("dashboard", "Dashboard and overview")
    rows = len(days) * users
    count_sql = "SELECT count(*) FROM stats_daily_user WHERE chat_id = %s AND day BETWEEN %s AND %s"

    def count() -> None:
        with connection.cursor() as cursor:
            cursor.execute(count_sql, [CHAT, start, today])

    base_ms = timed(count, quick).ms
    section.rows.append(
        Row(f"COUNT(*) over the same {rows:,} rows (baseline)", f"{base_ms:.1f} ms")
    )
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + count_sql, [CHAT, start, today])
        section.details.append("COUNT(*) baseline:\n" + plan_text(cursor.fetchall()))
    query = f"?chat_id={CHAT}&start={start.isoformat()}&end={today.isoformat()}"
    pages = {
        f"/api/v1/stats/report ({days_n} days)": "/api/v1/stats/report" + query,
        "/api/v1/stats/daily": "/api/v1/stats/daily" + query,
        "/api/v1/stats/members": "/api/v1/stats/members" + query,
        "/api/v1/stats/hours": "/api/v1/stats/hours" + query,
        "dashboard page (admin site > Statistics)": "/admin/stats/" + query,
        "admin index (the overview)": "/admin/",
    }
    for label, url in pages.items():

        def get(url: str = url) -> None:
            response = client.get(url)
            if response.status_code != 200:
                raise SystemExit(f"{url} answered {response.status_code}")

        timing = timed(get, quick)
        ms, api = timing.ms, url.startswith("/api/")
        row = Row(
            label,
            f"{ms:,.0f} ms, {timing.queries} queries ({timing.sql_ms:,.0f} ms in SQL)",
            f"{ms / base_ms:,.1f}x COUNT(*)" if api else "",
        )
        if url == "/admin/":
            row.target, row.verdict = "< 100 ms", check(ms, 100, below=True)
            row.summary = True
        elif url.startswith("/api/v1/stats/report"):
            row.target = "< 10x and < 200 ms"
            row.verdict = "met" if ms < 200 and ms < 10 * base_ms else "missed"
            row.summary = True
        section.rows.append(row)
        if timing.slowest:
            section.details.append(f"{label}, slowest query:\n" + explain(timing.slowest))
    section.notes += [
        f"{rows:,} rows in `stats_daily_user` for one chat ({days_n} days x {users:,} members, "
        f"COPY in {seed_seconds:.1f} s), every day's coverage complete, the read totals of "
        f"the {totals_days} verified days (`stats_daily_totals`, as finalize stores them, "
        f"{totals_seconds:.1f} s; today's rows are summed), the member sums of the "
        f"{months_stored} closed months (`stats_member_months`, {months_seconds:.1f} s; the "
        "other days' rows are summed), member profiles and the chat row; then ANALYZE.",
        "Each page through the Django test client as a logged-in superuser, in this process "
        "(no HTTP server): the median of up to 3 runs (fewer when a run is slow); the query "
        "count and the time in SQL (the driver's execute) of the first run. The dashboard page "
        "itself loads its figures from /api/v1/stats/report in the browser.",
    ]
    return section


# -- overview -------------------------------------------------------------------------------
OVERVIEW_CHATS = [-1004001, -1004002, -1004003, -1004004, -1004005]


def overview(quick: bool) -> Section:
    """The overview with a year of 5 chats: the admin index and "Today by chat", against the
    password form (an admin page that reads nothing) in the same run."""
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import override_settings, setup_test_environment

    from community.models import BotChat, MemberMovement
    from stats.models import StatsChat

    setup_test_environment()
    override_settings(
        STORAGES={
            **settings.STORAGES,
            "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
        }
    ).enable()
    days_n, users, moves = (20, 20, 4) if quick else (365, 400, 20)
    now = datetime.now(UTC)
    today = now.date()
    days = [today - timedelta(days=days_n - 1 - n) for n in range(days_n)]
    seed_seconds = copy_rows(copy_text(synthetic_rows(OVERVIEW_CHATS, days, users)))
    movements = []
    for chat in OVERVIEW_CHATS:
        StatsChat.objects.create(chat_id=chat, title=f"Chat {chat}", chat_type="supergroup")
        BotChat.objects.create(
            chat_id=chat, title=f"Chat {chat}", chat_type="supergroup", is_member=True
        )
        for n in range(days_n * moves):
            at = now - timedelta(minutes=n * 24 * 60 // moves + 1)
            kind = "join" if n % 3 else "leave"
            movements.append(
                MemberMovement(
                    chat_id=chat, user_id=n, stay=f"{chat}:{n}", kind=kind, at=at, day=at.date()
                )
            )
    MemberMovement.objects.bulk_create(movements, batch_size=5000)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    staff = get_user_model().objects.create_superuser("bench", "bench@example.org", "x" * 20)
    client = Client()
    client.force_login(staff)

    def page(url: str) -> Callable[[], None]:
        def get() -> None:
            response = client.get(url)
            if response.status_code != 200:
                raise SystemExit(f"{url} answered {response.status_code}")

        return get

    section = Section("overview", "Overview with a year of 5 chats")
    for url in ("/admin/password_change/", "/admin/", "/admin/stats/today/"):
        page(url)()  # a warm-up: the first render compiles the templates
    base = timed(page("/admin/password_change/"), quick)
    section.rows.append(
        Row("admin page reading nothing (baseline)", f"{base.ms:.1f} ms, {base.queries} queries")
    )
    for label, url in (
        ("admin index (the overview's cards)", "/admin/"),
        ("today by chat (the messages card's page)", "/admin/stats/today/"),
    ):
        timing = timed(page(url), quick)
        row = Row(
            label,
            f"{timing.ms:,.0f} ms, {timing.queries} queries ({timing.sql_ms:,.0f} ms in SQL)",
            f"{timing.ms / base.ms:,.1f}x baseline",
        )
        row.target, row.verdict = "< 100 ms", check(timing.ms, 100, below=True)
        row.summary = True
        section.rows.append(row)
        if timing.slowest:
            section.details.append(f"{label}, slowest query:\n" + explain(timing.slowest))
    section.notes += [
        f"{len(OVERVIEW_CHATS) * days_n * users:,} rows in `stats_daily_user` "
        f"({len(OVERVIEW_CHATS)} chats x {days_n} days x {users} members, "
        f"COPY in {seed_seconds:.1f} s) and "
        f"{len(movements):,} joins and leaves, then ANALYZE; each page through the Django test "
        "client as a logged-in superuser, in this process (no HTTP server).",
    ]
    return section


@dataclass(frozen=True)
class Timing:
    ms: float  # median of the runs
    queries: int  # of the first run
    sql_ms: float  # time in the database driver's execute, first run
    slowest: str  # the first run's slowest query, when it took a millisecond or more


def timed(call: Callable[[], None], quick: bool) -> Timing:
    """Up to 3 runs of ``call`` (one when quick; stopping once 20 s are spent)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    times: list[float] = []
    first: list[dict[str, Any]] = []
    for n in range(1 if quick else 3):
        with CaptureQueriesContext(connection) as captured:
            started = time.perf_counter()
            call()
            times.append((time.perf_counter() - started) * 1000)
        if n == 0:
            first = captured.captured_queries
        if sum(times) > 20_000:
            break
    top = max(first, key=lambda q: float(q["time"]), default=None)
    slowest = top["sql"] if top is not None and float(top["time"]) >= 0.001 else ""
    sql_ms = sum(float(q["time"]) for q in first) * 1000
    return Timing(statistics.median(times), len(first), sql_ms, slowest)


def explain(sql: str) -> str:
    from django.db import connection

    if not sql.lstrip().upper().startswith("SELECT"):
        return sql[:300]
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql.replace("%", "%%"))
        plan = plan_text(cursor.fetchall())
    short = sql if len(sql) < 400 else sql[:400] + " ..."
    return f"{short}\n{plan}"


def plan_text(rows: list[tuple[str]], limit: int = 25) -> str:
    lines = [row[0] for row in rows]
    more = len(lines) - limit
    return "\n".join(lines[:limit] + ([f"... ({more} more lines)"] if more > 0 else []))


if __name__ == "__main__":
    main()
