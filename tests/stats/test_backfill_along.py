"""The first phase (activity hours) reads each member-day's messages and words counters with its
hour counters and writes them in one row write; the phases after it walk every messages and
words counter still, and write only the rows that would change. These tests fail if a counter
read along were the only chance it got, if a later phase wrote unchanged rows again, or if an
increment between the phases were lost or doubled."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from django.db import connection

from stats import keys
from stats.backfill import JOB_NAME, Limits, backfill_run, lease_acquire, slice_run
from stats.backfill.state import Lease
from stats.models import BackfillState, DailyCoverage, DailyUserStat
from telegram_bot.state import KVStore
from tests.stats.kvseed import seed_day

CHAT = -100777
TODAY = datetime.now(UTC).date()
D1, D2 = TODAY - timedelta(days=2), TODAY - timedelta(days=1)
USERS = range(1, 9)
# Slices of a few keys: every phase takes several, and rows meet their counters in different
# slices.
SMALL = Limits(max_keys=5, max_reads=40, max_statements=13)


def seed(store: KVStore) -> None:
    """Two days of members, most with two hour counters."""
    for day in (D1, D2):
        for user_id in USERS:
            hours = {user_id % 24: 1, 23: user_id - 1} if user_id > 1 else {5: 1}
            seed_day(store, CHAT, day, user_id, messages=user_id, words=3 * user_id, hours=hours)


def rows() -> dict[tuple[date, int], tuple[int, ...]]:
    return {
        (row.day, row.user_id): (row.message_count, row.word_count, *row.hours())
        for row in DailyUserStat.objects.filter(chat_id=CHAT)
    }


def kv_rows(store: KVStore) -> dict[tuple[date, int], tuple[int, ...]]:
    """Every (day, member) row as its counters say."""
    out = {}
    for day in (D1, D2):
        for user_id in USERS:
            columns = ["message_count", "word_count", *(f"hour_{h:02d}" for h in range(24))]
            values = store.get_many([keys.column_key(c, CHAT, day, user_id) for c in columns])
            out[(day, user_id)] = tuple(v or 0 for v in values)
    return out


def run_until(lease: Lease, store: KVStore, phase: str) -> Lease:
    while lease.phase != phase:
        lease = slice_run(lease, SMALL, store).lease
    return lease


def versions() -> dict[tuple[date, int], str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT day, user_id, xmin::text FROM stats_daily_user WHERE chat_id = %s", [CHAT]
        )
        return {(day, user): xmin for day, user, xmin in cursor.fetchall()}


def test_the_hours_phase_writes_messages_and_words_and_the_later_phases_no_row_again(
    kv: KVStore, db: None
) -> None:
    seed(kv)
    lease = lease_acquire(owner="A", store=kv, force=True).lease
    assert lease is not None and lease.phase == "activity_hours"
    lease = run_until(lease, kv, "base")
    assert rows() == kv_rows(kv)  # messages and words came with the hours
    written = versions() if connection.vendor == "postgresql" else None
    assert backfill_run(owner="A", store=kv, limits=SMALL).outcome == "done"
    assert rows() == kv_rows(kv)
    if written is not None:
        # the base and words phases read every counter again and found nothing to change:
        # no row has a new version
        assert versions() == written
    statuses = DailyCoverage.objects.filter(chat_id=CHAT).values_list("status", flat=True)
    assert set(statuses) == {"complete"}


def test_counters_without_an_hour_counter_are_written_by_their_own_phase(
    kv: KVStore, db: None
) -> None:
    """A words counter whose messages and hour counters are gone (they are created first, so
    they expire first; or the KV store lost them), and a messages counter without hour
    counters: the base and words phases, which walk every key of their family, write them."""
    seed(kv)
    kv.increment(keys.column_key("word_count", CHAT, D1, 50), 7)  # words only
    kv.increment(keys.column_key("message_count", CHAT, D1, 51), 2)  # messages only
    kv.increment(keys.column_key("word_count", CHAT, D1, 51), 9)
    assert backfill_run(owner="A", store=kv, limits=SMALL, force=True).outcome == "done"
    stored = rows()
    assert stored[(D1, 50)] == (0, 7, *([0] * 24))
    assert stored[(D1, 51)] == (2, 9, *([0] * 24))
    assert {k: v for k, v in stored.items() if k[1] < 50} == kv_rows(kv)


def test_increments_between_the_phases_are_neither_lost_nor_doubled(kv: KVStore, db: None) -> None:
    """The run stops after the hours phase (its worker dies, its lease expires). Before the
    next worker resumes: a live write of a closed day adds to both stores (as the live writer
    does under the day's shared lock), and another adds to the KV store only (its writer died
    between the KV commit and the database commit). The phases after the hours phase take the
    KV-only messages and words in; its hour is past the hours phase, so finalize does not
    verify that day (the reconciliation rewrites it from the late marker such a write
    carries)."""
    seed(kv)
    lease = lease_acquire(owner="A", store=kv, force=True).lease
    assert lease is not None
    run_until(lease, kv, "base")  # A dies here, its lease still taken

    # consistent: both stores, D1, member 2
    for column, by in (("message_count", 1), ("word_count", 4), ("hour_02", 1)):
        kv.increment(keys.column_key(column, CHAT, D1, 2), by)
        kv.increment(keys.total_key(column, CHAT, D1), by)
    row = DailyUserStat.objects.get(chat_id=CHAT, day=D1, user_id=2)
    row.message_count += 1
    row.word_count += 4
    row.hour_02 += 1
    row.save()
    # KV only: D2, member 3
    for column, by in (("message_count", 2), ("word_count", 5), ("hour_07", 2)):
        kv.increment(keys.column_key(column, CHAT, D2, 3), by)
        kv.increment(keys.total_key(column, CHAT, D2), by)

    BackfillState.objects.filter(job_name=JOB_NAME).update(lease_expires_at=None)
    assert backfill_run(owner="B", store=kv, limits=SMALL).outcome == "done"
    stored, truth = rows(), kv_rows(kv)
    assert stored[(D1, 2)] == truth[(D1, 2)]  # once, not twice
    missed_hour = list(truth[(D2, 3)])
    missed_hour[2 + 7] -= 2
    assert stored[(D2, 3)] == tuple(missed_hour)  # messages and words taken in, the hour not
    assert {k: v for k, v in stored.items() if k != (D2, 3)} == {
        k: v for k, v in truth.items() if k != (D2, 3)
    }
    d1 = DailyCoverage.objects.get(chat_id=CHAT, day=D1, category="messages")
    d2 = DailyCoverage.objects.get(chat_id=CHAT, day=D2, category="messages")
    assert (d1.status, d2.status, d2.reason) == ("complete", "pending", "hour_07_mismatch")


def test_counters_read_along_only_while_the_budget_allows_and_are_not_lost(
    kv: KVStore, db: None
) -> None:
    """Slices that run out of reads: the last keys of a slice fit, the two counters read along
    with them do not, so those member-days' hours are written alone; the base and words
    phases write their messages and words. The result is the same."""
    for day in (D1, D2):
        for user_id in USERS:  # one hour counter a member-day
            seed_day(kv, CHAT, day, user_id, messages=user_id, words=3 * user_id)
    tight = Limits(max_keys=100, max_reads=36, max_statements=1000)
    lease = lease_acquire(owner="A", store=kv, force=True).lease
    assert lease is not None
    while lease.phase == "activity_hours":
        lease = slice_run(lease, tight, kv).lease
    hours_alone = [key for key, (messages, *_) in rows().items() if messages == 0]
    assert hours_alone  # the budget cut some member-days' counters read along
    assert backfill_run(owner="A", store=kv, limits=tight).outcome == "done"
    assert rows() == kv_rows(kv)
