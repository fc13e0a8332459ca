"""The backfill in batches: a slice's statements and KV round trips do not grow with its keys,
its day locks go in one statement, and batching keeps the fencing, the resume and the exact
results."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import connection, transaction
from django.db.models import F
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from stats import keys
from stats.backfill import (
    JOB_NAME,
    LeaseLostError,
    Limits,
    backfill_run,
    lease_acquire,
    slice_run,
    slices,
)
from stats.backfill.batch import CounterParser
from stats.backfill.sql import Fenced
from stats.daylock import day_lock_key
from stats.models import BackfillState, ChatUserProfile, DailyCoverage, DailyUserStat, StatsChat
from telegram_bot.state import KVStore
from telegram_bot.state.base import KVStore as BaseStore
from tests.stats.kvseed import seed_day

TODAY = datetime.now(UTC).date()
DAYS = [TODAY - timedelta(days=n) for n in range(6, 0, -1)]
CHATS = (-100901, -100902, -100903, -100904)
USERS = range(1, 21)
BIG = Limits(max_keys=5000, max_reads=12_000, max_statements=12_000)


def seed(store: KVStore) -> dict[tuple[int, date, int], tuple[int, int, int, int]]:
    """4 chats x 6 closed days x 20 members, plus today's keys (never taken), with names; the
    truth: (messages, words, voice seconds, messages in the member's hour)."""
    truth = {}
    for chat_id in CHATS:
        store.set(keys.chat_key(chat_id), {"title": f"chat {chat_id}", "type": "supergroup"})
        for day in [*DAYS, TODAY]:
            for user_id in USERS:
                messages = 1 + (user_id + day.day) % 7
                hour = (user_id + chat_id) % 24
                seed_day(store, chat_id, day, user_id, messages=messages, words=3 * messages,
                         hours={hour: messages}, voice=(1, user_id))  # fmt: skip
                if day < TODAY:
                    truth[(chat_id, day, user_id)] = (messages, 3 * messages, user_id, messages)
        for user_id in USERS:
            store.set(keys.last_message_key(chat_id, user_id), {"name": f"M{user_id}", "at": 1})
    return truth


def stored() -> dict[tuple[int, date, int], tuple[int, int, int, int]]:
    return {
        (row.chat_id, row.day, row.user_id): (
            row.message_count,
            row.word_count,
            row.voice_seconds,
            max(row.hours()),
        )
        for row in DailyUserStat.objects.all()
    }


def _ours(sql: str) -> bool:
    """A statement of the backfill (not one of the database KV store's)."""
    return ("stats_" in sql or "pg_advisory" in sql) and "SAVEPOINT" not in sql


class RoundTrips(BaseStore):
    """Passes every primitive to ``inner`` and counts its read round trips (a scan call, a get,
    a get_many)."""

    def __init__(self, inner: KVStore) -> None:
        super().__init__(prefix=inner.prefix)
        self.inner, self.trips = inner, 0
        self.url = inner.url

    def _get(self, raw_key: str) -> str | None:
        self.trips += 1
        return self.inner._get(raw_key)

    def _get_many(self, raw_keys: list[str]) -> list[str | None]:
        self.trips += 1
        return self.inner._get_many(raw_keys)

    def _scan(self, raw_prefix: str, cursor: str | None, limit: int) -> tuple[list[str], Any]:
        self.trips += 1
        return self.inner._scan(raw_prefix, cursor, limit)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    _set = property(lambda self: self.inner._set)  # type: ignore[assignment]
    _delete = property(lambda self: self.inner._delete)  # type: ignore[assignment]
    _set_if_absent = property(lambda self: self.inner._set_if_absent)  # type: ignore[assignment]
    _replace_if_equal = property(lambda self: self.inner._replace_if_equal)  # type: ignore[assignment]
    _delete_if_equal = property(lambda self: self.inner._delete_if_equal)  # type: ignore[assignment]
    _increment = property(lambda self: self.inner._increment)  # type: ignore[assignment]
    _apply_once = property(lambda self: self.inner._apply_once)  # type: ignore[assignment]
    _ping = property(lambda self: self.inner._ping)  # type: ignore[assignment]


def test_a_slice_costs_a_few_statements_and_round_trips_whatever_its_keys(
    kv: KVStore, db: None
) -> None:
    truth = seed(kv)
    store = RoundTrips(kv)
    lease = lease_acquire(owner="A", store=store, force=True).lease
    assert lease is not None
    per_phase: dict[str, list[tuple[int, int, int]]] = {}
    while lease.phase:
        store.trips = 0
        with CaptureQueriesContext(connection) as queries:
            report = slice_run(lease, BIG, store)
        statements = len([q for q in queries.captured_queries if _ours(q["sql"])])
        per_phase.setdefault(report.phase, []).append((report.keys, statements, store.trips))
        lease = report.lease
    # Each counter phase is one slice of all its keys (6 closed days and today, 4 chats, 20
    # members): the day lock, one statement a table, the state write; a scan and one
    # get_many. Written key by key, the base phase alone took over 1,000 statements and
    # 1,100 KV round trips.
    keys_per_phase = len(CHATS) * (len(DAYS) + 1) * len(USERS)
    if connection.vendor == "sqlite":  # VALUES in chunks of at most 900 parameters
        counters = ("base", "words", "media", "activity_hours")
        assert all(statements < 25 for phase in counters for _, statements, _ in per_phase[phase])
        per_phase = {p: [(k, 0, trips) for k, _, trips in s] for p, s in per_phase.items()}
        base = words = 0
    else:
        base, words = 6, 4  # the lock, rows, coverage, (profiles, chats,) the state
    # the hours phase reads each member-day's messages and words counters with its hour
    # counter: 1,680 counters, in two get_many calls of at most 1,000 keys
    assert per_phase["activity_hours"] == [(keys_per_phase, words, 3)]
    assert per_phase["base"] == [(keys_per_phase, base, 2)]
    assert per_phase["words"] == [(keys_per_phase, words, 2)]
    # voice count and seconds: twice the keys, two scan pages, one get_many of the closed days'
    assert per_phase["media"] == [(2 * keys_per_phase, words, 3)]
    # the 24 closed days: 34 totals and the recheck mark each in one get_many; 3 statements a day
    assert per_phase["finalize"][-1][0] == len(CHATS) * len(DAYS)
    assert per_phase["finalize"][-1][2] == 1
    assert stored() == truth
    assert ChatUserProfile.objects.count() == len(CHATS) * len(USERS)
    assert StatsChat.objects.count() == len(CHATS)
    assert set(
        DailyCoverage.objects.filter(category="messages").values_list("status", flat=True)
    ) == {"complete"}


@pytest.mark.skipif("connection.vendor != 'postgresql'")
def test_a_slice_spanning_many_days_and_chats_locks_each_day_once_in_one_statement(
    kv: KVStore, db: None
) -> None:
    truth = seed(kv)
    lease = lease_acquire(owner="A", store=kv, force=True).lease
    assert lease is not None
    with CaptureQueriesContext(connection) as queries:
        report = slice_run(lease, BIG, kv)
    locks = [q["sql"] for q in queries.captured_queries if "pg_advisory_xact_lock" in q["sql"]]
    assert len(locks) == 1  # every (chat, day) of the slice, in key order, in one statement
    assert "pg_advisory_xact_lock(" in locks[0]  # exclusive, not _shared
    locked = locks[0].split("'{")[1].split("}'")[0]
    # the closed days of the slice, each once (today's keys lock nothing), sorted
    expected = sorted(day_lock_key(chat_id, day) for chat_id in CHATS for day in DAYS)
    assert locked == ",".join(str(key) for key in expected)
    assert report.phase == "activity_hours" and report.lease.phase == "base"
    # the hours phase wrote each member-day's messages and words with its hours
    assert {row: (m, w, h) for row, (m, w, _, h) in stored().items()} == {
        row: (m, w, h) for row, (m, w, _, h) in truth.items()
    }


def test_a_lease_lost_mid_batch_writes_nothing(
    kv: KVStore, db: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(kv)
    lease = lease_acquire(owner="A", store=kv, force=True).lease
    assert lease is not None
    original = slices.read_staged

    def lease_taken_while_reading(store: KVStore, staged: Any) -> None:
        original(store, staged)
        # Another worker took the lease after this one chose and read its batch.
        BackfillState.objects.update(revision=F("revision") + 1)

    monkeypatch.setattr(slices, "read_staged", lease_taken_while_reading)
    with pytest.raises(LeaseLostError) as lost:
        slice_run(lease, BIG, kv)
    # every row and coverage row of the batch was refused by the fence
    expected_rows = len(CHATS) * len(DAYS) * len(USERS)
    assert lost.value.rejected_writes > expected_rows
    assert not DailyUserStat.objects.exists()
    assert not DailyCoverage.objects.exists()
    state = BackfillState.objects.get(job_name=JOB_NAME)
    assert (state.phase, state.cursor, state.keys_done) == ("activity_hours", "", 0)
    # the base phase's batch: its profiles and chats too
    BackfillState.objects.update(phase="base")
    lease = lease_acquire(owner="A", store=kv).lease
    assert lease is not None and lease.phase == "base"
    with pytest.raises(LeaseLostError) as lost:
        slice_run(lease, BIG, kv)
    assert lost.value.rejected_writes > expected_rows + len(CHATS) * len(USERS)
    assert not DailyUserStat.objects.exists() and not DailyCoverage.objects.exists()
    assert not ChatUserProfile.objects.exists() and not StatsChat.objects.exists()


def test_a_statement_refused_mid_slice_rolls_back_the_statements_before_it(
    kv: KVStore, db: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(kv)
    lease = lease_acquire(owner="A", store=kv, force=True).lease
    assert lease is not None
    # fenced out (the statement after the rows')
    monkeypatch.setattr(Fenced, "coverage_rebuilt_many", lambda self, triples, at: 0)
    with pytest.raises(LeaseLostError):
        slice_run(lease, BIG, kv)
    assert not DailyUserStat.objects.exists()  # written before the refusal, rolled back
    assert BackfillState.objects.get(job_name=JOB_NAME).keys_done == 0


def test_a_stale_workers_batches_are_refused_in_the_statements(db: None, kv: KVStore) -> None:
    stale = lease_acquire(owner="A", store=kv, force=True).lease
    assert stale is not None
    BackfillState.objects.update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    fresh = lease_acquire(owner="B", store=kv).lease
    assert fresh is not None
    day = DAYS[0]
    cells = [(CHATS[0], day, user_id, "message_count", user_id) for user_id in USERS]
    with transaction.atomic(), connection.cursor() as cursor:
        old, new = Fenced(cursor, stale, timezone.now()), Fenced(cursor, fresh, timezone.now())
        assert new.counters_put(cells)
        higher = [(c, d, u, column, 100 * v) for c, d, u, column, v in cells]
        assert not old.counters_put(higher)
        assert old.coverage_rebuilt_many([(CHATS[0], day, "messages")], 1) == 0
        assert old.profiles_put([(CHATS[0], 1, "name", "user")]) == 0
        assert old.chats_put([(CHATS[0], "title", "group")]) == 0
        # never lower a cell; a cell not given (no counter) is left alone
        lower = [(c, d, u, column, 0) for c, d, u, column, _ in cells]
        assert new.counters_put([*lower, (CHATS[0], day, 1, "word_count", 4)])
    assert {row.user_id: row.message_count for row in DailyUserStat.objects.all()} == {
        user_id: user_id for user_id in USERS
    }
    assert DailyUserStat.objects.get(user_id=1).word_count == 4
    assert not DailyCoverage.objects.exists() and not ChatUserProfile.objects.exists()
    with pytest.raises(ValueError, match="unknown stats columns"):
        Fenced(connection.cursor(), fresh, timezone.now()).counters_put(
            [(CHATS[0], day, 1, "id; --", 1)]
        )


@pytest.mark.skipif("connection.vendor != 'postgresql'")
def test_rows_that_would_not_change_are_not_written_again(db: None, kv: KVStore) -> None:
    """An upsert of an existing row writes a new version of it even when GREATEST changes
    nothing: rows whose every cell already holds the value are left out (their version, the
    ``xmin`` of the transaction that wrote them, stays), the others are written."""
    lease = lease_acquire(owner="A", store=kv, force=True).lease
    assert lease is not None
    day = DAYS[0]
    cells = [(CHATS[0], day, user_id, "message_count", user_id) for user_id in USERS]
    with transaction.atomic(), connection.cursor() as cursor:
        assert Fenced(cursor, lease, timezone.now()).counters_put(cells)

    def versions() -> dict[int, str]:
        with connection.cursor() as cursor:
            cursor.execute("SELECT user_id, xmin::text FROM stats_daily_user")
            return dict(cursor.fetchall())

    before = versions()
    again = [
        *cells,  # the same values
        (CHATS[0], day, 1, "message_count", 0),  # lower
        (CHATS[0], day, 2, "message_count", 3),  # higher
        (CHATS[0], day, 3, "word_count", 5),  # a cell not written before
    ]
    with transaction.atomic(), connection.cursor() as cursor:
        assert Fenced(cursor, lease, timezone.now()).counters_put(again)
    after = versions()
    assert {user for user in USERS if after[user] != before[user]} == {2, 3}
    assert dict(DailyUserStat.objects.values_list("user_id", "message_count")) == {
        user_id: 3 if user_id == 2 else user_id for user_id in USERS
    }
    assert DailyUserStat.objects.get(user_id=3).word_count == 5
    # fenced out: the answer says so even when no row would have changed
    BackfillState.objects.update(revision=F("revision") + 1)
    with transaction.atomic(), connection.cursor() as cursor:
        assert not Fenced(cursor, lease, timezone.now()).counters_put(cells)


def test_a_crash_mid_run_resumes_with_exact_results(
    kv: KVStore, db: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    truth = seed(kv)
    # Pages of 40 keys, slices of up to 150 keys that run out of reads mid-page: slices span
    # pages, and stop inside one (on Redis the keys done in it are saved with its cursor).
    monkeypatch.setattr(slices, "MAX_SCAN_LIMIT", 40)
    limits = Limits(max_keys=150, max_reads=110, max_statements=400)
    original, written = slices._write, {"slices": 0}

    def crash_in_the_fourth_slice(*args: Any) -> Any:
        written["slices"] += 1
        if written["slices"] == 4:
            raise SystemExit("killed")  # the transaction goes, the lease stays taken
        return original(*args)

    monkeypatch.setattr(slices, "_write", crash_in_the_fourth_slice)
    with pytest.raises(SystemExit):
        backfill_run(owner="A", store=kv, limits=limits, force=True)
    saved = BackfillState.objects.get(job_name=JOB_NAME)
    assert saved.lease_owner == "A" and saved.keys_done > 0
    assert saved.cursor  # mid-phase
    # On Redis a slice that stopped inside a page saved the keys done in it; one that ended
    # where a page ended (SCAN's pages vary in size from run to run) had none to save. What
    # matters is checked below: the resumed run is exact and did not start over.
    assert len(saved.page_done) < slices.MAX_SCAN_LIMIT

    BackfillState.objects.update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    report = backfill_run(owner="B", store=kv, limits=limits)
    assert report.outcome == "done"
    assert stored() == truth
    walked = len(CHATS) * (len(DAYS) + 1) * len(USERS) * 5  # five counter keys a member-day
    state = BackfillState.objects.get(job_name=JOB_NAME)
    finalized = len(CHATS) * len(DAYS)
    assert walked + finalized <= state.keys_done < walked + finalized + 150  # not started over
    assert set(DailyCoverage.objects.filter(category="hours").values_list("status", flat=True)) == {
        "complete"
    }


def test_the_parser_follows_the_key_rules() -> None:
    parse = CounterParser(keys.HOURS, TODAY)
    day = DAYS[0].isoformat()
    assert parse(f"stats:hour:-100:{day}:7:09") == (-100, DAYS[0], 7, "hour_09", "hours")
    for bad in (
        f"stats:hour:-100:{day}:7:24",
        f"stats:hour:-100:{day}:7:٠٣",  # digits of another script: never a column name
        f"stats:hour:-100:{day}:7",
        f"stats:hour:-100:{day}:x:09",
        f"stats:hour:-100:{DAYS[0].year}-02-30:7:09",
        f"stats:hour:-100:{TODAY.isoformat()}:7:09",  # from the cutoff on
    ):
        assert parse(bad) is None, bad
    media = CounterParser(keys.MEDIA, TODAY)
    assert media(f"stats:media:-100:{day}:7:voice_seconds") == (
        -100,
        DAYS[0],
        7,
        "voice_seconds",
        "media",
    )
    assert CounterParser(keys.CATEGORY, TODAY)(f"stats:cat:-1:{day}:2:profanity") == (
        -1,
        DAYS[0],
        2,
        "profanity_count",
        "profanity",
    )


def test_the_slice_limits_stay_bounded() -> None:
    assert Limits() == Limits(max_keys=5000, max_reads=12_000, max_statements=12_000)
    for bad in (
        {"max_keys": 0},
        {"max_keys": 10_001},
        {"max_reads": 34},
        {"max_reads": 100_001},
        {"max_statements": 5},
        {"max_statements": 100_001},
    ):
        with pytest.raises(ValueError, match="backfill limits"):
            Limits(**bad)


def test_the_command_refuses_limits_out_of_bounds(db: None) -> None:
    with pytest.raises(CommandError, match="backfill limits"):
        call_command("backfill_aggregates", "--max-keys", "20000")
