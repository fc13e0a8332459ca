"""The live writer: additive batches, coverage ownership, poisoning instead of losing facts."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from django.db import OperationalError, close_old_connections, connection

from stats import keys
from stats.backfill import backfill_run
from stats.live_writer import RowDelta, coverage_memo_clear, live_write
from stats.models import DailyCoverage, DailyUserStat
from telegram_bot.state import KVStore, open_store

CHAT = -100555
DAY = date(2024, 5, 1)


@pytest.fixture
def store() -> KVStore:
    return open_store("memory://")


def delta(user_id: int, day: date = DAY, **deltas: int) -> RowDelta:
    return RowDelta(CHAT, day, user_id, deltas)


def coverage(day: date = DAY) -> dict[str, tuple[str, str, bool]]:
    rows = DailyCoverage.objects.filter(chat_id=CHAT, day=day)
    return {row.category: (row.status, row.source, row.poisoned) for row in rows}


@pytest.mark.django_db
def test_it_adds_a_batch_merged_per_row(store: KVStore) -> None:
    batch = [
        delta(2, message_count=1, word_count=3, hour_10=1),
        delta(1, message_count=1, voice_count=1, voice_seconds=7, hour_10=1),
        delta(2, message_count=1, word_count=2, hour_11=1),
    ]
    assert live_write(store=store, rows=batch)
    assert live_write(store=store, rows=[delta(1, message_count=1, profanity_count=2)])
    one, two = DailyUserStat.objects.order_by("user_id")
    assert (one.message_count, one.voice_seconds, one.profanity_count) == (2, 7, 2)
    assert (two.message_count, two.word_count, two.hour_10, two.hour_11) == (2, 5, 1, 1)


@pytest.mark.django_db
def test_it_marks_what_it_wrote_live_and_the_rest_of_the_day_none(store: KVStore) -> None:
    live_write(store=store, rows=[delta(1, message_count=1, word_count=1, hour_03=1)])
    assert coverage() == {
        "hours": ("live", "live", False),
        "media": ("none", "live", False),
        "messages": ("live", "live", False),
        "profanity": ("none", "live", False),
        "violations": ("none", "live", False),
        "words": ("live", "live", False),
    }
    live_write(store=store, rows=[delta(1, message_count=1, voice_count=1, hour_03=1)])
    assert coverage()["media"] == ("live", "live", False)


@pytest.mark.django_db
def test_it_poisons_what_a_failed_write_touched_instead_of_raising(store: KVStore) -> None:
    with connection.execute_wrapper(fail_on("INSERT INTO stats_daily_user")):
        ok = live_write(store=store, rows=[delta(1, message_count=1, word_count=2, hour_09=1)])
    assert not ok
    assert not DailyUserStat.objects.exists()
    poisoned = {category for category, (_s, _src, p) in coverage().items() if p}
    assert poisoned == {"messages", "words", "hours"}
    assert sorted(store.scan_all(keys.POISON)) == [
        keys.poison_key(CHAT, DAY, category) for category in ("hours", "messages", "words")
    ]


@pytest.mark.django_db
def test_it_keeps_the_kv_mark_when_the_database_is_down_entirely(store: KVStore) -> None:
    with connection.execute_wrapper(fail_on("INSERT INTO stats_")):
        assert not live_write(store=store, rows=[delta(1, message_count=1, hour_09=1)])
    assert not DailyCoverage.objects.exists()
    assert len(list(store.scan_all(keys.POISON))) == 2


@pytest.mark.django_db
def test_it_never_lowers_live_coverage(store: KVStore, kv_today: date) -> None:
    yesterday, earlier = kv_today - timedelta(days=1), kv_today - timedelta(days=2)
    live_write(store=store, rows=[delta(1, yesterday, message_count=1, hour_01=1)])
    for day in (yesterday, earlier):  # earlier: a day the live writer never saw
        store.increment(keys.counter_key(keys.MESSAGES, CHAT, day, 1), 1)
        store.increment(keys.counter_key(keys.HOURS, CHAT, day, 1, "01"), 1)
        store.increment(keys.activity_key(CHAT, day), 1)
        store.increment(keys.total_key("hour_01", CHAT, day), 1)
    report = backfill_run(owner="w", store=store, force=True, max_slices=1)
    assert report.outcome == "paused"  # the base phase rebuilt both days...
    assert coverage(yesterday)["messages"] == ("live", "live", False)  # ...live stays live
    assert coverage(earlier)["messages"] == ("pending", "backfill", False)
    assert backfill_run(owner="w", store=store).outcome == "done"
    assert coverage(yesterday)["messages"] == ("complete", "live", False)
    assert coverage(earlier)["messages"] == ("complete", "backfill", False)

    coverage_memo_clear()  # as in another web process, which has not seen the days yet
    for day in (yesterday, earlier):  # late messages keep verified days complete
        live_write(store=store, rows=[delta(2, day, message_count=1, hour_02=1)])
        assert coverage(day)["messages"] == ("complete", "live", False)
        assert coverage(day)["words"][0] in ("none", "complete")


@pytest.mark.django_db(transaction=True)
def test_it_does_not_deadlock_with_concurrent_overlapping_batches(store: KVStore) -> None:
    """Two writers, rows in opposite orders: sorted rows mean no lock cycle (PostgreSQL)."""
    failures: list[BaseException] = []

    def writer(users: list[int]) -> None:
        try:
            for _ in range(40):
                batch = [delta(user, message_count=1, hour_05=1) for user in users]
                if not live_write(store=store, rows=batch):
                    failures.append(RuntimeError("a write was poisoned"))
        except BaseException as exc:
            failures.append(exc)
        finally:
            close_old_connections()
            connection.close()

    threads = [
        threading.Thread(target=writer, args=(users,))
        for users in ([1, 2, 3, 4], [4, 3, 2, 1], [2, 4, 1, 3])
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not failures
    assert set(DailyUserStat.objects.values_list("message_count", flat=True)) == {120}


@pytest.fixture
def kv_today() -> date:
    return datetime.now(UTC).date()


def fail_on(prefix: str) -> Callable[..., Any]:
    def wrapper(execute: Callable[..., Any], sql: str, params: Any, many: bool, ctx: Any) -> Any:
        if prefix in sql:  # the live writer sends its lock and add as one statement
            raise OperationalError("the database went away")
        return execute(sql, params, many, ctx)

    return wrapper
