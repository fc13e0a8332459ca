"""Every column verified (issue 17, defect 2), the reconciliation of late days, the day lock,
and the live writer's ordering paths (lock, commit, add) when the database fails."""

from __future__ import annotations

import threading
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from django.db import OperationalError, close_old_connections, connection, transaction

from stats import keys
from stats.backfill import backfill_run
from stats.config import counting_config
from stats.counting import MessageFacts, counting_ops
from stats.daylock import lock_days
from stats.live_writer import RowDelta, count_once
from stats.models import CATEGORIES, DailyCoverage, DailyUserStat
from stats.reconcile import reconcile_run
from stats.selectors import stats_report
from telegram_bot.state import Increment, KVStore, Put, open_store
from tests.stats.kvseed import seed_day
from tests.stats.test_backfill import CountingStore

CHAT = -100777
TODAY = datetime.now(UTC).date()
D1, D2 = TODAY - timedelta(days=2), TODAY - timedelta(days=1)


@pytest.fixture
def memory() -> KVStore:
    return open_store("memory://")


def statuses(day: date, chat_id: int = CHAT) -> dict[str, str]:
    rows = DailyCoverage.objects.filter(chat_id=chat_id, day=day)
    return {row.category: row.status for row in rows}


def reason(day: date) -> str:
    return DailyCoverage.objects.get(chat_id=CHAT, day=day, category="messages").reason


def row(day: date, user_id: int) -> DailyUserStat:
    return DailyUserStat.objects.get(chat_id=CHAT, day=day, user_id=user_id)


# --- counting: totals and late markers -----------------------------------------------------
def facts(day: date, **fields: Any) -> MessageFacts:
    ts = int(datetime(day.year, day.month, day.day, 13, 5, tzinfo=UTC).timestamp())
    return MessageFacts(chat_id=CHAT, user_id=7, message_id=1, ts=ts, kind="voice", **fields)


@pytest.mark.django_db
def test_a_counted_message_adds_every_column_to_the_chats_daily_total() -> None:
    ops = counting_ops(facts(TODAY, words=3, voice_seconds=9), counting_config())
    totals = {op.key: op.by for op in ops if isinstance(op, Increment) and "total" in op.key}
    assert totals == {
        keys.total_key(column, CHAT, TODAY): delta
        for column, delta in {
            "word_count": 3, "voice_count": 1, "voice_seconds": 9, "hour_13": 1
        }.items()
    }  # fmt: skip
    assert any(op.key == keys.activity_key(CHAT, TODAY) for op in ops)  # messages' total
    assert not any(op.key.startswith((keys.LATE, keys.LATE_FLAG)) for op in ops)


@pytest.mark.django_db
def test_a_message_for_a_closed_day_or_one_about_to_close_leaves_a_late_marker() -> None:
    config = counting_config()
    late = counting_ops(facts(D2), config)
    assert {op.key for op in late if isinstance(op, Put)} >= {keys.late_key(CHAT, D2, 7)}
    assert Increment(keys.LATE_FLAG, 1, config.counter_ttl_ms) in late
    midnight = datetime(TODAY.year, TODAY.month, TODAY.day, tzinfo=UTC) + timedelta(days=1)
    almost = int(midnight.timestamp() * 1000) - config.late_margin_ms // 2
    assert any(o.key == keys.LATE_FLAG for o in counting_ops(facts(TODAY), config, now_ms=almost))
    early = almost - config.late_margin_ms
    assert not any(
        o.key == keys.LATE_FLAG for o in counting_ops(facts(TODAY), config, now_ms=early)
    )


# --- finalize verifies every column ----------------------------------------------------------
@pytest.mark.django_db
@pytest.mark.parametrize("column", ["word_count", "voice_seconds", "profanity_count", "hour_12"])
def test_finalize_does_not_verify_a_day_whose_column_disagrees_with_its_total(
    memory: KVStore, column: str
) -> None:
    seed_day(memory, CHAT, D1, 1, messages=4, words=5, voice=(1, 30), profanity=2)
    seed_day(memory, CHAT, D2, 1, messages=4, words=5, voice=(1, 30), profanity=2)
    memory.increment(keys.total_key(column, CHAT, D2), 1)  # one increment the rows never got
    assert backfill_run(store=memory).outcome == "done"
    assert statuses(D1) == dict.fromkeys(CATEGORIES, "complete")
    assert "complete" not in statuses(D2).values()
    assert reason(D2) == f"{column}_mismatch"
    report = stats_report(chat_id=CHAT, start=D1, end=D2, store=memory)
    assert [view.source for view in report.days] == ["database", "database_unverified"]


@pytest.mark.django_db
def test_finalize_leaves_alone_a_day_whose_counters_may_have_started_to_expire(
    memory: KVStore, settings: Any
) -> None:
    settings.STATS_COUNTER_TTL_DAYS = 2
    seed_day(memory, CHAT, D1, 1, messages=2)  # two days old: its totals may be gone already
    seed_day(memory, CHAT, D2, 1, messages=2)
    assert backfill_run(store=memory).outcome == "done"
    assert row(D1, 1).message_count == 2  # rebuilt...
    assert "complete" not in statuses(D1).values()  # ...but not judged
    assert statuses(D2) == dict.fromkeys(CATEGORIES, "complete")


@pytest.mark.django_db
def test_the_backfill_never_lowers_a_cell_and_does_not_verify_a_day_above_its_totals(
    memory: KVStore,
) -> None:
    seed_day(memory, CHAT, D2, 1, messages=3, words=6)
    # The database holds more than the KV store (the KV store lost increments, say).
    DailyUserStat.objects.create(chat_id=CHAT, day=D2, user_id=1, message_count=5, word_count=9)
    assert backfill_run(store=memory).outcome == "done"
    assert (row(D2, 1).message_count, row(D2, 1).word_count) == (5, 9)
    assert reason(D2) == "message_count_mismatch"
    assert "complete" not in statuses(D2).values()


@pytest.mark.django_db
def test_a_day_counts_as_verified_only_when_every_category_is(memory: KVStore) -> None:
    seed_day(memory, CHAT, D2, 1, messages=2, words=2)
    assert backfill_run(store=memory).outcome == "done"
    assert stats_report(chat_id=CHAT, start=D2, end=D2, store=memory).days[0].source == "database"
    DailyCoverage.objects.filter(chat_id=CHAT, day=D2, category="hours").update(status="live")
    assert stats_report(chat_id=CHAT, start=D2, end=D2, store=memory).days[0].source == "live"
    DailyCoverage.objects.filter(chat_id=CHAT, day=D2, category="hours").delete()
    assert stats_report(chat_id=CHAT, start=D2, end=D2, store=memory).days[0].source == "live"


# --- reconciliation --------------------------------------------------------------------------
def late_commit(
    store: KVStore, day: date, user_id: int, words: int, now_ms: int | None = None
) -> None:
    """What the update path commits for a late text message (no database add)."""
    ts = int(datetime(day.year, day.month, day.day, 13, 5, tzinfo=UTC).timestamp())
    message = MessageFacts(CHAT, user_id, 1, ts, "text", words=words)
    marker = f"upd:{day.toordinal()}{user_id}{words}"
    ops = counting_ops(message, counting_config(), now_ms=now_ms)
    store.apply_once(marker, {"s": "done"}, ops)


@pytest.mark.django_db
def test_the_reconciliation_repairs_and_reverifies_a_verified_day_whose_add_was_lost(
    memory: KVStore,
) -> None:
    seed_day(memory, CHAT, D1, 1, messages=2, words=2, hours={13: 2})
    seed_day(memory, CHAT, D2, 1, messages=2, words=2, hours={13: 2})
    assert backfill_run(store=memory).outcome == "done"
    late_commit(memory, D2, 1, words=4)  # a late message whose process died before the add
    late_commit(memory, D2, 2, words=1)  # and another member's, new that day
    assert reconcile_run(store=memory).outcome == "done"
    assert (row(D2, 1).message_count, row(D2, 1).word_count) == (3, 6)
    assert (row(D2, 2).message_count, row(D2, 2).word_count) == (1, 1)
    assert statuses(D2) == dict.fromkeys(CATEGORIES, "complete")
    assert reconcile_run(store=memory).outcome == "idle"  # markers retired, flag seen


@pytest.mark.django_db
def test_the_reconciliation_reopens_a_day_it_cannot_make_agree(memory: KVStore) -> None:
    seed_day(memory, CHAT, D2, 1, messages=2, words=2, hours={13: 2})
    assert backfill_run(store=memory).outcome == "done"
    late_commit(memory, D2, 1, words=1)
    memory.increment(keys.total_key("voice_seconds", CHAT, D2), 5)  # no member counter has it
    assert reconcile_run(store=memory).outcome == "done"
    assert "complete" not in statuses(D2).values() and reason(D2) == "voice_seconds_mismatch"
    report = stats_report(chat_id=CHAT, start=D2, end=D2, store=memory)
    assert report.days[0].source == "database_unverified"


@pytest.mark.django_db
def test_the_reconciliation_costs_two_gets_when_nothing_was_late(memory: KVStore) -> None:
    counting = CountingStore(memory)
    assert reconcile_run(store=counting).outcome == "idle"
    assert counting.reads == 1  # the flag is absent: not even the seen value is read
    late_commit(memory, D2, 1, words=1)
    assert reconcile_run(store=memory).outcome == "done"
    counting.reads = 0
    assert reconcile_run(store=counting).outcome == "idle"
    assert counting.reads == 2  # the flag and the seen value: no scan


@pytest.mark.django_db
def test_the_reconciliation_reads_no_member_counter_for_a_day_that_agrees(memory: KVStore) -> None:
    seed_day(memory, CHAT, D2, 1, messages=2, words=2, hours={13: 2})
    assert backfill_run(store=memory).outcome == "done"
    for user_id in (1, 2, 3):  # late messages whose database adds went through
        ts = int(datetime(D2.year, D2.month, D2.day, 13, tzinfo=UTC).timestamp())
        message = MessageFacts(CHAT, user_id, 1, ts, "text", words=2)
        ops = counting_ops(message, counting_config())
        row = RowDelta(CHAT, D2, user_id, message.deltas())
        marker = f"upd:{user_id}"
        assert count_once(
            store=memory, commit=lambda m=marker, o=ops: memory.apply_once(m, 1, o), rows=[row]
        )
    counting = CountingStore(memory)
    assert reconcile_run(store=counting).outcome == "done"
    # flag, seen, one scan page, 3 markers, the day's recheck mark and its 34 totals: no
    # member's counter.
    assert counting.reads == 2 + 1 + 3 + 1 + 34
    assert statuses(D2) == dict.fromkeys(CATEGORIES, "complete")


@pytest.mark.django_db
def test_the_reconciliation_takes_at_most_its_limit_of_days_per_run(memory: KVStore) -> None:
    days = [TODAY - timedelta(days=n) for n in (5, 4, 3, 2, 1)]
    for day in days:
        late_commit(memory, day, 1, words=1)
    first = reconcile_run(store=memory, limit=2)
    assert (first.outcome, first.days) == ("more", 2)
    assert set(DailyCoverage.objects.values_list("day", flat=True)) == set(days[:2])  # oldest
    assert reconcile_run(store=memory, limit=2).outcome == "more"
    assert reconcile_run(store=memory, limit=2).outcome == "done"
    assert reconcile_run(store=memory, limit=2).outcome == "idle"
    for day in days:
        assert statuses(day) == dict.fromkeys(CATEGORIES, "complete")


@pytest.mark.django_db
def test_the_reconciliation_leaves_a_day_that_has_not_closed_for_later(memory: KVStore) -> None:
    midnight = datetime(TODAY.year, TODAY.month, TODAY.day, tzinfo=UTC) + timedelta(days=1)
    a_minute_before = int(midnight.timestamp() * 1000) - 60_000
    late_commit(memory, TODAY, 1, words=1, now_ms=a_minute_before)  # within the margin
    assert reconcile_run(store=memory).outcome == "done"
    assert not DailyCoverage.objects.exists()
    assert reconcile_run(store=memory).outcome == "done"  # still looked at: not marked seen
    tomorrow = TODAY + timedelta(days=1)
    assert reconcile_run(store=memory, today=tomorrow).outcome == "done"
    assert statuses(TODAY) == dict.fromkeys(CATEGORIES, "complete")
    assert reconcile_run(store=memory, today=tomorrow).outcome == "idle"


# --- the live writer's ordering paths --------------------------------------------------------
def delta(day: date = D2, user_id: int = 1) -> RowDelta:
    return RowDelta(CHAT, day, user_id, {"message_count": 1, "hour_13": 1})


def fail_on(prefix: str) -> Any:
    """Fail the statements that contain ``prefix`` (on PostgreSQL the live writer sends its
    lock and its add as one)."""

    def wrapper(execute: Any, sql: str, params: Any, many: bool, ctx: Any) -> Any:
        if prefix in sql:
            raise OperationalError("the database went away")
        return execute(sql, params, many, ctx)

    return wrapper


@pytest.mark.django_db
def test_it_counts_in_the_kv_store_and_poisons_when_the_day_lock_cannot_be_taken(
    memory: KVStore,
) -> None:
    lock_sql = "SELECT pg_advisory" if connection.vendor == "postgresql" else "UPDATE stats_backf"
    commits: list[str] = []
    with connection.execute_wrapper(fail_on(lock_sql)):
        applied = count_once(
            store=memory, commit=lambda: commits.append("c") or True, rows=[delta()]
        )
    assert applied and commits == ["c"]
    assert not DailyUserStat.objects.exists()
    assert memory.get(keys.poison_key(CHAT, D2, "messages")) is not None


@pytest.mark.django_db(transaction=True)
def test_a_failed_add_keeps_a_commit_made_in_the_same_database_transaction(db: None) -> None:
    """With the database KV store the commit joins the live writer's transaction: a failed add
    rolls back to a savepoint, the commit stays, and the day is poisoned."""
    store = open_store("db://")
    ops = [Increment(keys.activity_key(CHAT, D2), 1)]
    with connection.execute_wrapper(fail_on("INSERT INTO stats_daily_user")):
        applied = count_once(
            store=store,
            commit=lambda: store.apply_once("upd:42", {"s": "done"}, ops),
            rows=[delta()],
        )
    assert applied and store.get(keys.activity_key(CHAT, D2)) == 1
    assert store.get("upd:42") == {"s": "done"}
    assert DailyCoverage.objects.get(chat_id=CHAT, day=D2, category="messages").poisoned


@pytest.mark.django_db
def test_a_duplicate_commit_takes_back_the_add_written_before_it(memory: KVStore) -> None:
    """The add is written before the KV commit, in the lock's transaction: a commit that says
    "done before" rolls it back, so a re-delivery adds nothing to the database."""
    assert count_once(store=memory, commit=lambda: True, rows=[delta()])
    assert not count_once(store=memory, commit=lambda: False, rows=[delta()])
    assert row(D2, 1).message_count == 1 and row(D2, 1).hour_13 == 1


@pytest.mark.django_db
def test_the_live_writer_costs_one_statement_per_message(memory: KVStore) -> None:
    """The day's lock, the add and the coverage go to the database together (PostgreSQL: one
    query; SQLite: the lock's no-op write is a statement of its own) and before the commit."""
    order: list[str] = []

    def record(execute: Any, sql: str, params: Any, many: bool, ctx: Any) -> Any:
        if "SAVEPOINT" not in sql:  # the test's own transaction makes the writer's a savepoint
            order.append(sql)
        return execute(sql, params, many, ctx)

    with connection.execute_wrapper(record):
        count_once(store=memory, commit=lambda: order.append("kv commit") or True, rows=[delta()])
    statements = 1 if connection.vendor == "postgresql" else 3
    assert len(order) == statements + 1 and order[-1] == "kv commit"
    joined = " ".join(order)
    assert joined.index("INSERT INTO stats_daily_user") < joined.index("stats_daily_coverage")


@pytest.mark.django_db
def test_a_commit_that_raises_counts_nothing_and_raises(memory: KVStore) -> None:
    def broken() -> bool:
        raise RuntimeError("KV store down")

    with pytest.raises(RuntimeError):
        count_once(store=memory, commit=broken, rows=[delta()])
    assert not DailyUserStat.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_an_exclusive_day_lock_waits_for_a_live_writer_in_flight(db: None) -> None:
    """The live writer holds the day's lock from before its commit until its add commits; the
    backfill's exclusive lock (here: taken in another thread) waits for it."""
    committed, go = threading.Event(), threading.Event()
    seen: list[int] = []
    errors: list[BaseException] = []

    def commit() -> bool:
        committed.set()
        assert go.wait(30)
        return True

    def writer() -> None:
        try:
            count_once(store=open_store("memory://"), commit=commit, rows=[delta()])
        except BaseException as exc:
            errors.append(exc)
        finally:
            close_old_connections()
            connection.close()

    def locker() -> None:
        try:
            with transaction.atomic():
                lock_days([(CHAT, D2)], shared=False)
                seen.append(DailyUserStat.objects.filter(chat_id=CHAT).count())
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    first = threading.Thread(target=writer)
    first.start()
    assert committed.wait(30)
    second = threading.Thread(target=locker)
    second.start()
    second.join(0.3)  # a head start; the outcome below does not depend on timing
    go.set()
    first.join(30)
    second.join(30)
    assert not errors, errors
    assert seen == [1]  # the exclusive holder saw the add, never the moment before it


def test_the_day_lock_needs_a_transaction(transactional_db: None) -> None:
    with pytest.raises(RuntimeError, match="transaction"):
        lock_days([(CHAT, D2)], shared=True)
