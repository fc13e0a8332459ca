"""The backfill job: lease, fencing, bounded slices, crash recovery, cutoff, finalize, poison."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from stats import keys
from stats.backfill import (
    JOB_NAME,
    LeaseLostError,
    Limits,
    backfill_reset,
    backfill_run,
    lease_acquire,
    slice_run,
)
from stats.backfill.sql import Fenced
from stats.models import BackfillState, DailyCoverage, DailyUserStat
from stats.poison import poison_mark, poison_marks
from telegram_bot.state import KVStore, open_store
from telegram_bot.state.base import KVStore as BaseStore
from tests.stats.kvseed import seed_day

CHAT = -100444
TODAY = datetime.now(UTC).date()
D1, D2, D3 = (TODAY - timedelta(days=n) for n in (3, 2, 1))
TINY = Limits(max_keys=4, max_reads=40, max_statements=7)


@pytest.fixture
def memory() -> KVStore:
    return open_store("memory://")


@pytest.fixture
def many_days(kv: KVStore, db: None) -> KVStore:
    """30 members over three closed days and today, in two chats."""
    for chat_id in (CHAT, CHAT - 1):
        for day in (D1, D2, D3, TODAY):
            for user_id in range(1, 16):
                seed_day(kv, chat_id, day, user_id, messages=user_id, words=2 * user_id,
                         hours={user_id % 24: user_id}, voice=(1, user_id))  # fmt: skip
    return kv


def stored(chat_id: int = CHAT) -> dict[tuple[date, int], tuple[int, int, int]]:
    return {
        (row.day, row.user_id): (row.message_count, row.word_count, row.voice_seconds)
        for row in DailyUserStat.objects.filter(chat_id=chat_id)
    }


def expected(days: tuple[date, ...] = (D1, D2, D3)) -> dict[tuple[date, int], tuple[int, ...]]:
    return {(day, u): (u, 2 * u, u) for day in days for u in range(1, 16)}


def test_it_refuses_the_lease_while_another_worker_holds_it(db: None, memory: KVStore) -> None:
    first = lease_acquire(owner="A", store=memory, force=True)
    assert first.outcome == "started" and first.lease is not None
    assert lease_acquire(owner="B", store=memory, force=True).outcome == "busy"
    assert backfill_run(owner="B", store=memory).outcome == "busy"
    BackfillState.objects.update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    second = lease_acquire(owner="B", store=memory)
    assert second.outcome == "resumed" and second.lease is not None
    assert second.lease.revision == first.lease.revision + 1


def test_it_resumes_from_the_saved_cursor_after_a_crash(many_days: KVStore) -> None:
    acquired = lease_acquire(owner="A", store=many_days, force=True)
    lease = acquired.lease
    assert lease is not None
    for _ in range(5):  # then worker A dies: no release, no more writes
        lease = slice_run(lease, TINY, many_days).lease
    saved = BackfillState.objects.get(job_name=JOB_NAME)
    assert (saved.phase, saved.cursor, saved.page_offset) == (
        lease.phase,
        lease.cursor or "",
        lease.page_offset,
    )
    assert saved.keys_done == lease.keys_done > 0

    assert lease_acquire(owner="B", store=many_days).outcome == "busy"  # the lease stalls...
    BackfillState.objects.update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    taken = lease_acquire(owner="B", store=many_days)  # ...until it expires
    assert taken.outcome == "resumed" and taken.lease is not None
    assert (taken.lease.phase, taken.lease.cursor, taken.lease.page_offset) == (
        lease.phase,
        lease.cursor,
        lease.page_offset,
    )
    resumed = taken.lease
    while resumed.phase:
        resumed = slice_run(resumed, TINY, many_days).lease
    assert stored() == expected() and stored(CHAT - 1) == expected()
    keys_in_scope = BackfillState.objects.get(job_name=JOB_NAME).keys_done
    assert keys_in_scope < 2 * _keys_walked(many_days)  # it went on, it did not start over


def test_it_stays_within_the_slice_limits(many_days: KVStore) -> None:
    store = CountingStore(many_days)
    lease = lease_acquire(owner="A", store=store, force=True).lease
    assert lease is not None
    half_pages = 0
    while lease.phase:
        store.reads = 0
        with CaptureQueriesContext(connection) as queries:
            report = slice_run(lease, TINY, store)
        statements = [q for q in queries.captured_queries if "stats_" in q["sql"]]
        assert report.keys <= TINY.max_keys
        assert store.reads == report.reads <= TINY.max_reads
        assert len(statements) <= TINY.max_statements
        same_page = (report.lease.phase, report.lease.step) == (lease.phase, lease.step)
        # Stopped mid-page: on an ordered store the cursor is the last key taken (the page was
        # not full), on Redis the keys done in the page are saved with its cursor.
        half_pages += same_page and (
            bool(report.lease.page_done)
            or (report.keys < TINY.max_keys and report.lease.cursor is not None)
        )
        lease = report.lease
    assert half_pages > 0  # some slices stopped mid-page on reads or statements
    assert stored() == expected()


def test_it_fixes_the_cutoff_day_when_a_run_starts(db: None, memory: KVStore) -> None:
    seed_day(memory, CHAT, D2, 1, messages=2)
    seed_day(memory, CHAT, D3, 1, messages=3)
    report = backfill_run(owner="A", store=memory, today=D3, limits=TINY, max_slices=1)
    assert report.outcome == "paused"
    # The run goes on "after midnight": its cutoff stays D3, D3 is left to the next run.
    assert backfill_run(owner="A", store=memory, today=TODAY).outcome == "done"
    assert stored() == {(D2, 1): (2, 0, 0)}
    assert backfill_run(owner="A", store=memory, today=D3).outcome == "idle"
    assert backfill_run(owner="A", store=memory, today=TODAY).outcome == "done"  # a new day
    assert stored() == {(D2, 1): (2, 0, 0), (D3, 1): (3, 0, 0)}


def test_it_forgets_the_run_on_reset_and_fences_out_its_worker(db: None, memory: KVStore) -> None:
    seed_day(memory, CHAT, D2, 1, messages=2)
    lease = lease_acquire(owner="A", store=memory, force=True).lease
    assert lease is not None
    state = backfill_reset()
    assert (state.status, state.phase, state.revision) == ("idle", "", lease.revision + 1)
    with pytest.raises(LeaseLostError):
        slice_run(lease, TINY, memory)
    assert not DailyUserStat.objects.exists()


def test_it_rejects_a_stale_workers_write_in_the_statement_itself(
    db: None, memory: KVStore
) -> None:
    stale = lease_acquire(owner="A", store=memory, force=True).lease
    assert stale is not None
    BackfillState.objects.update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    fresh = lease_acquire(owner="B", store=memory).lease
    assert fresh is not None
    with transaction.atomic(), connection.cursor() as cursor:
        assert Fenced(cursor, fresh, timezone.now()).aggregate_put(CHAT, D1, 1, {"word_count": 5})
        assert not Fenced(cursor, stale, timezone.now()).aggregate_put(
            CHAT, D1, 1, {"word_count": 99}
        )
        assert not Fenced(cursor, stale, timezone.now()).aggregate_put(
            CHAT, D3, 1, {"word_count": 99}
        )
        assert not Fenced(cursor, stale, timezone.now()).coverage_rebuilt(CHAT, D2, "words", 1)
    assert stored() == {(D1, 1): (0, 5, 0)}  # neither the update nor the insert went through
    assert not DailyCoverage.objects.filter(day=D2).exists()


def test_it_finalizes_a_day_only_when_its_counts_match_a_daily_total(
    db: None, memory: KVStore
) -> None:
    seed_day(memory, CHAT, D1, 1, messages=3)
    seed_day(memory, CHAT, D1, 2, messages=4)
    seed_day(memory, CHAT, D2, 1, messages=3)
    memory.increment(keys.activity_key(CHAT, D2), 2)  # the total says 5, the members 3
    seed_day(memory, CHAT, D3, 1, messages=3, total=False)
    assert backfill_run(owner="A", store=memory, limits=TINY).outcome == "done"
    verdicts = {
        row.day: (row.status, row.reason)
        for row in DailyCoverage.objects.filter(chat_id=CHAT, category="messages")
    }
    assert verdicts == {
        D1: ("complete", ""),
        D2: ("pending", "message_count_mismatch"),
        D3: ("pending", "missing_activity_total"),
    }
    assert DailyCoverage.objects.get(chat_id=CHAT, day=D1, category="hours").status == "complete"
    assert DailyCoverage.objects.get(chat_id=CHAT, day=D2, category="hours").status == "pending"


def test_it_clears_a_poison_only_when_the_day_was_verified_after_it(
    db: None, memory: KVStore, settings: Any
) -> None:
    settings.STATS_BACKFILL_CLOCK_SKEW_MS = 0
    seed_day(memory, CHAT, D1, 1, messages=3, words=4)
    seed_day(memory, CHAT, D2, 1, messages=3, words=4)
    past = int(timezone.now().timestamp() * 1000) - 60_000
    for day in (D1, D2):
        poison_mark(memory, CHAT, day, "words", past)
    report = backfill_run(owner="A", store=memory, limits=TINY, max_slices=5)
    # activity hours, base and words are done (a key a slice, the words in one)
    assert report.outcome == "paused" and report.phase == "media"
    # A failure whose mark lands after finalize has verified the day (its writer rolled back
    # and released the day's lock before the verification, and marks it only then).
    later = int(timezone.now().timestamp() * 1000) + 3_600_000
    poison_mark(memory, CHAT, D2, "words", later)
    assert backfill_run(owner="A", store=memory, limits=TINY).outcome == "done"

    words = {r.day: r for r in DailyCoverage.objects.filter(chat_id=CHAT, category="words")}
    assert (words[D1].status, words[D1].poisoned) == ("complete", False)
    assert (words[D2].poisoned_at, words[D2].status) == (later, "pending")  # verified before it
    assert not list(poison_marks(memory))  # both marks moved onto the coverage rows

    # Two hours on (moved by the allowed skew, not by sleeping): verified after the mark.
    settings.STATS_BACKFILL_CLOCK_SKEW_MS = -7_200_000
    assert backfill_run(owner="A", store=memory, limits=TINY).outcome == "done"  # it was due
    words_d2 = DailyCoverage.objects.get(chat_id=CHAT, day=D2, category="words")
    assert (words_d2.status, words_d2.poisoned) == ("complete", False)
    assert backfill_run(owner="A", store=memory).outcome == "idle"


def test_it_starts_a_run_when_a_closed_day_is_poisoned_after_the_last_one(
    db: None, memory: KVStore
) -> None:
    seed_day(memory, CHAT, D1, 1, messages=1)
    assert backfill_run(owner="A", store=memory).outcome == "done"  # the first run is due
    assert backfill_run(owner="A", store=memory).outcome == "idle"
    poison_mark(memory, CHAT, TODAY, "messages", 1)
    assert backfill_run(owner="A", store=memory).outcome == "idle"  # today is not closed
    poison_mark(memory, CHAT, D1, "messages", 1)
    assert backfill_run(owner="A", store=memory).outcome == "done"


def test_the_due_check_scans_for_poison_marks_only_after_one_was_written(
    db: None, memory: KVStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed_day(memory, CHAT, D1, 1, messages=1)
    assert backfill_run(owner="A", store=memory).outcome == "done"
    scans: list[str] = []
    real_scan = memory.scan

    def counting_scan(prefix: str, cursor: str | None = None, limit: int = 100) -> Any:
        scans.append(prefix)
        return real_scan(prefix, cursor, limit)

    monkeypatch.setattr(memory, "scan", counting_scan)
    assert backfill_run(owner="A", store=memory).outcome == "idle"
    assert keys.POISON not in scans  # no mark written: no walk of the keyspace
    poison_mark(memory, CHAT, TODAY, "messages", 1)
    assert backfill_run(owner="A", store=memory).outcome == "idle"
    assert keys.POISON in scans


class CountingStore(BaseStore):
    """Passes every primitive to ``inner`` and counts the reads (get and scan)."""

    def __init__(self, inner: KVStore) -> None:
        super().__init__(prefix=inner.prefix)
        self.inner, self.reads = inner, 0
        self.url = inner.url  # the backfill tells ordered scans from the URL

    def _get(self, raw_key: str) -> str | None:
        self.reads += 1
        return self.inner._get(raw_key)

    def _scan(self, raw_prefix: str, cursor: str | None, limit: int) -> tuple[list[str], Any]:
        self.reads += 1
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


def _keys_walked(store: KVStore) -> int:
    families = (keys.MESSAGES, keys.WORDS, keys.MEDIA, keys.CATEGORY, keys.HOURS)
    counts = Counter(family for family in families for _ in store.scan_all(family))
    return sum(counts.values())
