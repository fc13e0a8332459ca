"""The member sums of closed months (``stats_member_months``): the ranking and a period's
totals read them for the whole months of a range and are the same as from the rows; written
after finalize or the reconciliation verify a day of a closed month, and by the fill; never
for the open month; dropped by any later write to a row of their month (the triggers of
migration 0008), also while a late live write is in flight (the days' locks)."""

from __future__ import annotations

import io
import random
import time
import zoneinfo
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from django.db import connection, transaction
from django.db.models import F
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from stats import aggregates
from stats.aggregates import month_last, month_of
from stats.backfill import backfill_run
from stats.backfill.sql import Fenced
from stats.member_months import month_fill, month_write, months_after_verified
from stats.models import CATEGORIES, DailyCoverage, DailyUserStat, MemberMonth
from stats.privacy import erase
from stats.reconcile import reconcile_run
from stats.schedules import SCHEDULES
from stats.selectors import previous_period, stats_report
from stats.tasks import month_sums_tick
from telegram_bot.privacy import Subject
from telegram_bot.scheduling import declared_schedules
from telegram_bot.state import KVStore, override_store
from tests.builders import make_message_update
from tests.locks import wait_until_waiting_for_a_lock
from tests.stats.test_ordering import GateStore, in_thread, post

GROUP = -100777
ZONES = ("UTC", "Europe/Moscow", "America/Bogota")  # UTC, UTC+3, UTC-5


def today() -> date:
    return datetime.now(UTC).date()


def last_month() -> date:
    """The first day of the month before the current one (closed)."""
    return month_of(month_of(today()) - timedelta(days=1))


def at(day: date, hour: int) -> int:
    return int(datetime(day.year, day.month, day.day, hour, 30, tzinfo=UTC).timestamp())


def say(post_update: Any, user_id: int, text: str, ts: int, chat_id: int = GROUP) -> None:
    update = make_message_update(
        text, chat_id=chat_id, user_id=user_id, chat_type="supergroup", date=ts
    )
    assert post_update(update)["X-Update-Outcome"] == "processed"


def months_of(chat_id: int = GROUP) -> set[date]:
    return set(MemberMonth.objects.filter(chat_id=chat_id).values_list("month", flat=True))


def sums_match_rows(chat_id: int, month: date) -> bool:
    """The stored sums of (chat, month) are the sums of its rows, member by member."""
    stored = {
        row["user_id"]: row
        for row in MemberMonth.objects.filter(chat_id=chat_id, month=month).values(
            "user_id", *aggregates.VALUE_COLUMNS, "last_day"
        )
    }
    summed: dict[int, dict[str, Any]] = {}
    for row in DailyUserStat.objects.filter(
        chat_id=chat_id, day__gte=month, day__lte=month_last(month)
    ).values("user_id", "day", *aggregates.VALUE_COLUMNS):
        user = summed.setdefault(
            row["user_id"],
            {
                "user_id": row["user_id"],
                "last_day": row["day"],
                **dict.fromkeys(aggregates.VALUE_COLUMNS, 0),
            },
        )
        for column in aggregates.VALUE_COLUMNS:
            user[column] += row[column]
        user["last_day"] = max(user["last_day"], row["day"])
    return stored == summed


def seed_rows(chat_id: int, first: date, last: date, rng: random.Random) -> None:
    """Random rows for 25 members on the days ``first``..``last``: about half of them a day,
    some rows without messages; messages in random UTC hours."""
    rows = []
    for day in aggregates.days_between(first, last):
        for user_id in range(1, 26):
            if rng.random() < 0.5:
                continue
            hours = [0] * 24
            for _ in range(rng.choice([0, 1, 1, 2, 5])):
                hours[rng.randrange(24)] += 1
            messages = sum(hours)
            rows.append(
                DailyUserStat(
                    chat_id=chat_id,
                    day=day,
                    user_id=user_id,
                    message_count=messages,
                    word_count=messages * rng.randint(0, 7) + rng.randint(0, 2),
                    voice_count=rng.randint(0, 1),
                    voice_seconds=rng.randint(0, 40),
                    video_note_count=rng.randint(0, 1),
                    video_note_seconds=rng.randint(0, 9),
                    profanity_count=rng.randint(0, 2),
                    violations_low=rng.randint(0, 1),
                    violations_medium=rng.randint(0, 1),
                    violations_high=rng.randint(0, 1),
                    **{column: hours[n] for n, column in enumerate(aggregates.HOUR_COLUMNS)},
                )
            )
    DailyUserStat.objects.bulk_create(rows, batch_size=500)
    DailyCoverage.objects.bulk_create(
        DailyCoverage(chat_id=chat_id, day=day, category=category, status="complete")
        for day in aggregates.days_between(first, min(last, today() - timedelta(days=1)))
        for category in CATEGORIES
    )


def range_reads(chat_id: int, zone: str, start: date, end: date) -> list[Any]:
    """Everything the reads give for the local range ``start``..``end`` in ``zone``: every
    order's ranking (whole, a page, a page past the end, a few members), a period's totals,
    the report's members and previous period."""
    tz = zoneinfo.ZoneInfo(zone)
    splits = {
        day: aggregates.split_of(aggregates.day_hours(day, tz))
        for day in aggregates.days_between(start - timedelta(days=1), end + timedelta(days=1))
    }
    parts = aggregates.range_parts(splits, start, end)
    reads: list[Any] = []
    for order in aggregates.ORDERS:
        reads.append(aggregates.member_rows(chat_id, parts, order=order))
        reads.append(aggregates.member_rows(chat_id, parts, order=order, limit=7, offset=3))
    reads.append(aggregates.member_rows(chat_id, parts, limit=5, offset=500))
    reads.append(aggregates.member_rows(chat_id, parts, users=[2, 3, 5, 99]))
    reads.append(aggregates.period_totals(chat_id, parts))
    report = stats_report(
        chat_id=chat_id, start=start, end=end, store=_NoKV(), zone=tz, today=today()
    )
    reads.append([(m.user_id, m.messages, m.words, m.last_day) for m in report.members()])
    reads.append(previous_period(report))
    return reads


class _NoKV:
    """A KV store without counters: the reads then ask it for nothing they use."""

    def get(self, key: str) -> None:
        return None

    def get_many(self, keys: list[str]) -> list[None]:
        return [None] * len(keys)


@pytest.mark.django_db
@pytest.mark.parametrize("zone", ZONES)
def test_the_reads_are_the_same_with_and_without_the_month_sums(zone: str) -> None:
    rng = random.Random(f"months-{zone}")
    first = month_of(today() - timedelta(days=130))  # four or five closed months, and this one
    seed_rows(GROUP, first - timedelta(days=3), today(), rng)
    ranges = [
        (first, today()),  # whole closed months, the open month
        (first + timedelta(days=1), month_of(today()) - timedelta(days=2)),  # partial ends
        (last_month(), month_last(last_month())),  # exactly one month
        (last_month() - timedelta(days=1), month_last(last_month()) + timedelta(days=1)),
        (first + timedelta(days=40), first + timedelta(days=44)),  # within a month
    ]
    ranges += [
        (start, start + timedelta(days=rng.randint(0, 110)))
        for start in (first + timedelta(days=rng.randint(0, 60)) for _ in range(4))
    ]
    ranges = [(start, min(end, today())) for start, end in ranges]
    without = [range_reads(GROUP, zone, start, end) for start, end in ranges]

    assert month_fill() >= 4
    assert months_of() and max(months_of()) == last_month()
    for month in months_of():
        assert sums_match_rows(GROUP, month)
    with CaptureQueriesContext(connection) as queries:
        with_sums = [range_reads(GROUP, zone, start, end) for start, end in ranges]

    assert with_sums == without
    assert any("stats_member_months" in q["sql"] for q in queries.captured_queries)
    # Some months without their sums (the month a range starts in, a whole month): the same.
    MemberMonth.objects.filter(month__in=[first, last_month()]).delete()
    assert [range_reads(GROUP, zone, start, end) for start, end in ranges] == without
    assert month_fill() == 2
    # And they are read: a sum nothing else has shows in the ranking (an update of the sums
    # fires no trigger).
    MemberMonth.objects.filter(chat_id=GROUP, month=last_month(), user_id=1).update(
        message_count=10_000
    )
    rows, _ = range_reads(GROUP, zone, first, today())[0]
    assert rows[0].user_id == 1 and rows[0].values["message_count"] > 10_000
    # The month a range starts in is its sums less its first days, when it keeps more days.
    start = last_month() + timedelta(days=2)
    rows, _ = range_reads(GROUP, zone, start, today())[0]
    assert rows[0].user_id == 1 and rows[0].values["message_count"] > 9_000


@pytest.mark.django_db
def test_no_sums_for_the_open_month_and_its_writes_drop_nothing() -> None:
    rng = random.Random(3)
    seed_rows(GROUP, last_month(), today(), rng)
    assert month_write(GROUP, month_of(today())) == 0
    assert months_after_verified([(GROUP, today()), (GROUP, today() - timedelta(days=1))]) in (
        0,
        1,  # on the first day of a month, yesterday is of the closed month
    )
    assert month_of(today()) not in months_of()
    month_write(GROUP, last_month())
    stored = list(MemberMonth.objects.filter(chat_id=GROUP).order_by("user_id").values())
    assert stored
    DailyUserStat.objects.filter(chat_id=GROUP, day=today()).update(word_count=50)
    DailyUserStat.objects.create(chat_id=GROUP, day=today(), user_id=777, message_count=1)
    assert list(MemberMonth.objects.filter(chat_id=GROUP).order_by("user_id").values()) == stored


@pytest.mark.django_db
@pytest.mark.parametrize("write", ["insert", "update", "delete", "backfill", "move"])
def test_any_write_to_a_row_of_a_closed_month_drops_the_chat_month(write: str) -> None:
    rng = random.Random(write)
    other = GROUP - 1
    seed_rows(GROUP, last_month() - timedelta(days=40), today(), rng)
    seed_rows(other, last_month(), today(), rng)
    assert month_fill() >= 3
    before = months_of()
    assert last_month() in before and last_month() in months_of(other)
    day = last_month() + timedelta(days=9)

    if write == "insert":
        DailyUserStat.objects.create(chat_id=GROUP, day=day, user_id=500, message_count=1)
    elif write == "update":
        DailyUserStat.objects.filter(chat_id=GROUP, day=day).update(profanity_count=9)
    elif write == "delete":
        DailyUserStat.objects.filter(chat_id=GROUP, day=day).delete()
    elif write == "backfill":  # never lowers a cell: nothing changes, the sums still go
        with transaction.atomic(), connection.cursor() as cursor:
            user_id = DailyUserStat.objects.filter(chat_id=GROUP, day=day).first().user_id  # type: ignore[union-attr]
            Fenced(cursor, None, timezone.now()).aggregate_put(
                GROUP, day, user_id, {"message_count": 0}
            )
    else:  # rows moved to another member, as an erasure does
        DailyUserStat.objects.filter(chat_id=GROUP, day=day).update(user_id=F("user_id") + 1000)

    assert months_of() == before - {last_month()}
    assert last_month() in months_of(other)  # another chat's month stays
    assert month_fill() == 1
    assert sums_match_rows(GROUP, last_month())


def test_a_late_message_drops_the_month_and_the_reconciliation_stores_it_again(
    wired: KVStore, post_update: Any, admin_client: Client
) -> None:
    day = month_last(last_month())
    say(post_update, 1, "one two", at(day, 10))
    say(post_update, 2, "three", at(day - timedelta(days=1), 23))
    say(post_update, 1, "today", int(time.time()) - 1)
    assert backfill_run(owner="t", force=True).outcome == "done"
    assert months_of() == {last_month()}  # stored once finalize verified its days
    assert sums_match_rows(GROUP, last_month())
    query = {"chat_id": GROUP, "start": last_month(), "end": today()}
    first = admin_client.get("/api/v1/stats/report", query).json()

    say(post_update, 3, "late four five", at(day, 12))
    assert months_of() == set()  # the live add's trigger
    assert reconcile_run(store=wired).outcome == "done"

    assert months_of() == {last_month()}
    assert sums_match_rows(GROUP, last_month())
    again = admin_client.get("/api/v1/stats/report", query).json()
    assert again["members_total"] == first["members_total"] + 1
    assert {m["user_id"] for m in again["members"]} == {1, 2, 3}


def test_an_erasure_drops_the_months_of_the_member_s_rows(wired: KVStore, post_update: Any) -> None:
    day = month_last(last_month())
    for user_id in (1, 2):
        say(post_update, user_id, "a b c", at(day, 9))
    assert backfill_run(owner="t", force=True).outcome == "done"
    assert MemberMonth.objects.filter(chat_id=GROUP, user_id=2).exists()

    erase(Subject(user_id=2, anonymous_id=2**52 + 9, marker_prefix="lock:erase:t:"), wired)

    assert not MemberMonth.objects.filter(user_id=2).exists()
    assert month_sums_tick() == "stored 1 months"  # the schedule stores them again
    assert sums_match_rows(GROUP, last_month())
    assert not MemberMonth.objects.filter(user_id=2).exists()
    spec = next(spec for spec in SCHEDULES if spec.name == "stats_month_sums")
    assert spec in declared_schedules() and spec.func == "stats.tasks.month_sums_tick"


@pytest.mark.django_db
def test_the_command_stores_the_months_that_have_none() -> None:
    from django.core.management import call_command

    seed_rows(GROUP, last_month() - timedelta(days=20), today(), random.Random(5))
    out = io.StringIO()
    call_command("stats_totals", stdout=out)
    assert "stored the member sums of 2 closed months" in out.getvalue()
    assert months_of() == {last_month(), month_of(last_month() - timedelta(days=20))}
    MemberMonth.objects.filter(month=last_month()).update(message_count=7)
    out = io.StringIO()
    call_command("stats_totals", stdout=out)  # a month with sums is left alone
    assert "stored the member sums of 0 closed months" in out.getvalue()
    assert set(
        MemberMonth.objects.filter(month=last_month()).values_list("message_count", flat=True)
    ) == {7}


@pytest.mark.django_db
def test_the_ranking_is_one_statement_when_the_months_have_sums() -> None:
    start, end = today() - timedelta(days=365), today()
    seed_rows(GROUP, start - timedelta(days=1), end, random.Random(7))
    month_fill()
    zone = zoneinfo.ZoneInfo("Europe/Moscow")

    def parts_of(first: date) -> aggregates.RangeParts:
        splits = {
            day: aggregates.split_of(aggregates.day_hours(day, zone))
            for day in aggregates.days_between(first - timedelta(days=1), end)
        }
        return aggregates.range_parts(splits, first, end)

    with CaptureQueriesContext(connection) as queries:
        aggregates.member_rows(GROUP, parts_of(start), limit=10)
        aggregates.period_totals(GROUP, parts_of(start))
    assert len(queries.captured_queries) == 2
    # A month with rows and no sums (a write dropped them): read again from its rows, one
    # statement more; the months before the chat's first rows have no sums and need none.
    earlier = parts_of(start - timedelta(days=120))
    DailyUserStat.objects.filter(chat_id=GROUP, day=last_month()).update(profanity_count=3)
    with CaptureQueriesContext(connection) as queries:
        rows, total = aggregates.member_rows(GROUP, earlier, limit=10)
        aggregates.period_totals(GROUP, earlier)
    assert len(queries.captured_queries) == 4
    MemberMonth.objects.all().delete()
    assert aggregates.member_rows(GROUP, earlier, limit=10) == (rows, total)


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(120)
def test_a_late_write_in_flight_never_leaves_stale_sums(wired: KVStore, post_update: Any) -> None:
    """A late live write has committed its KV increments and holds its day's lock SHARED; the
    sums of its month are written meanwhile, from another connection: they wait for its
    database add and include it (or, on SQLite, the writer holds the write lock)."""
    day = month_last(last_month())
    say(post_update, 1, "one two", at(day, 10))
    say(post_update, 2, "three", at(day - timedelta(days=3), 8))
    gate = GateStore(wired)
    errors: list[BaseException] = []
    with override_store(gate):
        late = make_message_update(
            "late four five", chat_id=GROUP, user_id=3, chat_type="supergroup", date=at(day, 20)
        )
        gate.armed = True
        writer = in_thread(lambda: post(Client(), late) and None, errors)
        assert gate.committed.wait(60)  # the KV commit is done, the database add is not
        stored: list[int] = []
        summer = in_thread(lambda: stored.append(month_write(GROUP, day)), errors)
        wait_until_waiting_for_a_lock(summer, "the month's sums")
        gate.go.set()
        writer.join(60)
        summer.join(60)
    assert not errors, errors
    assert DailyUserStat.objects.filter(chat_id=GROUP, day=day, user_id=3).exists()
    # Either order leaves sums that equal the rows (or none): never a month without the add.
    if months_of():
        assert sums_match_rows(GROUP, last_month())
        assert MemberMonth.objects.filter(chat_id=GROUP, user_id=3).exists()
    if connection.vendor == "postgresql":
        assert stored == [3] and sums_match_rows(GROUP, last_month())
