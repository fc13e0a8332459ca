"""Ground truth: a random conversation through the webhook, then the backfill, on every KV
backend; every aggregate equals what the test counted itself (tests/stats/conversation.py).

Also with the backfill worker losing its lease mid-phase to a second worker, and with the
database failing during live writes.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from django.db import OperationalError, connection, transaction
from django.db.models import F
from django.utils import timezone

from stats import keys
from stats.backfill import JOB_NAME, LeaseLostError, Limits, backfill_run, slices
from stats.models import (
    BackfillState,
    DailyCoverage,
    DailyUserStat,
)
from stats.poison import poison_marks
from telegram_bot.state import KVStore
from tests.stats.conversation import Conversation, configure_rules
from tests.stats.truth import assert_report_matches, assert_rows, db_rows, truth_rows

# Small slices, so that every phase takes several and pages are left half-done.
SMALL = Limits(max_keys=7, max_reads=40, max_statements=13)


@pytest.fixture
def days() -> list[date]:
    today = datetime.now(UTC).date()
    return [today - timedelta(days=n) for n in (3, 2, 1, 0)]


@pytest.fixture
def conversation(days: list[date]) -> Conversation:
    configure_rules()
    return Conversation(seed=6, days=days, now=int(time.time()))


def test_it_counts_a_shuffled_redelivered_conversation_exactly(
    wired: KVStore,
    post_update: Any,
    admin_client: Any,
    conversation: Conversation,
    days: list[date],
) -> None:
    today, truth = days[-1], conversation.truth
    outcomes = _deliver(post_update, conversation.updates)
    assert outcomes["duplicate"] >= 20 and outcomes["processed"] > 240

    assert_rows(db_rows(), truth_rows(truth))  # the live writer alone
    for (chat_id, day), total in truth.totals.items():
        assert wired.get(keys.activity_key(chat_id, day)) == total
    for chat_id, count in truth.buffered.items():
        assert len(list(wired.scan_all(f"msg:{chat_id}:"))) == count

    # Data the live writer never saw (written before the tables existed, or lost to a crash
    # between the two writes): gone, or short of some increments.
    chats = conversation.chats
    DailyUserStat.objects.filter(chat_id=chats[0], day__lt=today).delete()
    DailyUserStat.objects.filter(chat_id=chats[1], day__lt=today).update(
        message_count=F("message_count") / 2, word_count=0, voice_seconds=F("voice_seconds") / 3
    )
    report = backfill_run(owner="worker-1", limits=SMALL, force=True)

    assert report.outcome == "done" and report.slices > 20
    assert_rows(db_rows(), truth_rows(truth))
    _assert_closed_days_complete(truth, today)
    assert "live" in _statuses(today) <= {"live", "none"}  # the backfill left today alone
    for chat_id in chats:
        body = _report(admin_client, chat_id, days)
        assert_report_matches(body, truth, chat_id)
        assert [d["source"] for d in body["days"]] == ["database"] * 3 + ["live"]


def test_it_fences_out_a_backfill_worker_that_lost_its_lease(
    wired: KVStore,
    post_update: Any,
    admin_client: Any,
    conversation: Conversation,
    days: list[date],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    today, truth = days[-1], conversation.truth
    _deliver(post_update, conversation.updates)
    original = slices._write
    seen: dict[str, Any] = {"words_slices": 0}

    def worker_a_stalls(lease: Any, position: Any, staged: Any, taken: int) -> Any:
        if lease.owner != "A" or lease.phase != "words":
            return original(lease, position, staged, taken)
        seen["words_slices"] += 1
        if seen["words_slices"] < 2 or not staged.cells:
            return original(lease, position, staged, taken)
        # A has read a slice mid-phase and stalls before writing it (here: its transaction,
        # and with it the days' locks, goes; what it read stays in its memory).
        seen["a"] = (lease, position, staged, taken)
        raise Stalled

    monkeypatch.setattr(slices, "_write", worker_a_stalls)
    with pytest.raises(Stalled):
        backfill_run(owner="A", limits=SMALL, force=True)
    # A's lease runs out, a late message changes a row A read, and worker B takes over and
    # finishes the whole run.
    BackfillState.objects.filter(job_name=JOB_NAME).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1)
    )
    lease, position, staged, taken = seen["a"]
    chat_id, day, user_id = min(cell[:3] for cell in staged.cells)
    stale = {cell[3]: cell[4] for cell in staged.cells if cell[:3] == (chat_id, day, user_id)}
    late = conversation.late_message(chat_id, day, user_id, words=5)
    assert post_update(late)["X-Update-Outcome"] == "processed"
    report_b = backfill_run(owner="B", limits=SMALL)
    before = _snapshot()
    with pytest.raises(LeaseLostError) as lost, transaction.atomic():
        original(lease, position, staged, taken)  # A wakes up and writes what it read
    assert lost.value.rejected_writes > 0
    assert _snapshot() == before  # fenced: A changed nothing

    assert report_b.outcome == "done"
    state = BackfillState.objects.get(job_name=JOB_NAME)
    assert state.keys_done > report_b.keys  # B resumed A's run, it did not start over
    row = DailyUserStat.objects.get(chat_id=chat_id, day=day, user_id=user_id)
    assert row.word_count == stale["word_count"] + 5  # A's stale value would have lost these
    assert_rows(db_rows(), truth_rows(truth))
    _assert_closed_days_complete(truth, today)
    for chat_id in conversation.chats:
        assert_report_matches(_report(admin_client, chat_id, days), truth, chat_id)


def test_it_repairs_live_writes_lost_to_a_failing_database(
    wired: KVStore,
    post_update: Any,
    admin_client: Any,
    conversation: Conversation,
    days: list[date],
) -> None:
    today, truth = days[-1], conversation.truth
    _deliver(post_update, conversation.joins)
    failing = FailingDatabase(random.Random(66))
    with connection.execute_wrapper(failing):
        _deliver(post_update, conversation.body)

    assert failing.failed_writes > 10 and failing.outages > 3
    assert db_rows() != truth_rows(truth)  # facts are missing from the database...
    marked_days = {day for _, day, _, _ in poison_marks(wired)}
    assert marked_days >= {days[0], today}  # ...and marked poisoned
    assert DailyCoverage.objects.filter(poisoned_at__isnull=False).exists()
    for chat_id in conversation.chats:  # poisoned days are served from the KV counters
        body = _report(admin_client, chat_id, days)
        assert_report_matches(body, truth, chat_id)
        assert all(day["source"] == "live" for day in body["days"] if day["poisoned"])

    time.sleep(0.01)  # the backfill's phases start strictly after the last poisoning
    assert backfill_run(owner="repair", limits=SMALL, force=True).outcome == "done"

    assert_rows(db_rows(before=today), truth_rows(truth, before=today))
    _assert_closed_days_complete(truth, today)
    assert {day for _, day, _, _ in poison_marks(wired)} == {today}  # today is not rebuilt yet
    for chat_id in conversation.chats:
        body = _report(admin_client, chat_id, days)
        assert_report_matches(body, truth, chat_id)
        assert [d["source"] for d in body["days"]] == ["database"] * 3 + ["live"]


class Stalled(Exception):
    """Worker A stops in the middle of a slice."""


class FailingDatabase:
    """Fails about a third of the live writer's aggregate upserts with OperationalError; in
    half of those the database stays down for the coverage write too (a KV-only poison mark).
    A real ``execute_wrapper`` on the connection: the statement never reaches the database."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.failed_writes = self.outages = 0
        self._down = False

    def __call__(self, execute: Callable[..., Any], sql: str, params: Any, many: bool, ctx: Any):
        if "INSERT INTO stats_daily_user" in sql and self.rng.random() < 0.33:
            self.failed_writes += 1
            self._down = self.rng.random() < 0.5
            self.outages += self._down
            raise OperationalError("server closed the connection unexpectedly")
        if self._down and "INSERT INTO stats_daily_coverage" in sql:
            self._down = False
            raise OperationalError("could not connect to server")
        return execute(sql, params, many, ctx)


def _deliver(post_update: Any, updates: list[dict[str, Any]]) -> Counter[str]:
    outcomes: Counter[str] = Counter()
    for update in updates:
        response = post_update(update)
        assert response.status_code == 200, response.content
        outcomes[response["X-Update-Outcome"]] += 1
    return outcomes


def _report(client: Any, chat_id: int, days: list[date]) -> dict[str, Any]:
    params = {"chat_id": chat_id, "start": days[0], "end": days[-1], "limit": 1000}
    response = client.get("/api/v1/stats/report", params)
    assert response.status_code == 200, response.content
    return response.json()


def _assert_closed_days_complete(truth: Any, today: date) -> None:
    for (chat_id, day), _total in truth.totals.items():
        if day >= today:
            continue
        rows = DailyCoverage.objects.filter(chat_id=chat_id, day=day)
        assert {row.status for row in rows} == {"complete"}, (chat_id, day)
        assert not any(row.poisoned or row.reason for row in rows), (chat_id, day)


def _statuses(day: date) -> set[str]:
    return set(DailyCoverage.objects.filter(day=day).values_list("status", flat=True))


def _snapshot() -> tuple[list[Any], list[Any]]:
    return (
        list(DailyUserStat.objects.order_by("id").values()),
        list(DailyCoverage.objects.order_by("id").values()),
    )
