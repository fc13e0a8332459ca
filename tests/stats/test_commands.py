"""``manage.py backfill_aggregates`` and the schedule that runs the backfill."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import CommandError, call_command

from stats import keys
from stats.models import BackfillState, DailyCoverage, DailyUserStat
from stats.schedules import SCHEDULES
from stats.tasks import backfill_tick, reconcile_tick
from telegram_bot.scheduling import declared_schedules
from telegram_bot.state import KVStore
from tests.stats.kvseed import seed_day

CHAT = -100321
YESTERDAY = datetime.now(UTC).date() - timedelta(days=1)


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("backfill_aggregates", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def counters(db: None, memory_store: KVStore) -> KVStore:
    for user_id in (1, 2, 3):
        seed_day(memory_store, CHAT, YESTERDAY, user_id, messages=user_id, words=user_id)
    return memory_store


def test_it_runs_shows_status_and_resets(counters: KVStore) -> None:
    assert "never run" in run("--status")
    dry = run("--dry-run")
    assert "rows:  3 (3 would change)" in dry and "1 would be complete" in dry
    assert not DailyUserStat.objects.exists() and not BackfillState.objects.exists()

    output = run("--max-keys", "2")
    assert "base" in output and "finalize" in output and "run complete" in output
    assert DailyUserStat.objects.count() == 3
    assert "0 would change" in run("--dry-run")
    status = run("--status")
    assert "status:     done" in status and "complete 6" in status and "poisoned 0" in status
    assert "nothing due" in run()

    revision = BackfillState.objects.get().revision
    assert f"revision {revision + 1}" in run("--reset")
    assert "status:     idle" in run("--status")
    assert "run complete" in run()


def test_it_refuses_limits_too_small_for_one_key(counters: KVStore) -> None:
    with pytest.raises(CommandError, match="too small"):
        run("--max-reads", "3")


def test_it_is_scheduled_every_minute_and_the_tick_runs_the_job(counters: KVStore) -> None:
    spec = next(spec for spec in SCHEDULES if spec.name == "stats_backfill")
    assert spec in declared_schedules() and spec.minutes == 1
    assert spec.func == "stats.tasks.backfill_tick"
    assert backfill_tick() == "done"
    assert backfill_tick() == "idle"
    assert DailyUserStat.objects.count() == 3


def test_it_runs_a_reconciliation_pass(counters: KVStore) -> None:
    assert "reconciliation: idle (0 days" in run("--reconcile")
    assert "run complete" in run()
    counters.increment(keys.total_key("word_count", CHAT, YESTERDAY), 1)  # one add missing
    counters.set(keys.late_key(CHAT, YESTERDAY, 1), {"at": 1})
    counters.increment(keys.LATE_FLAG, 1)
    assert "reconciliation: done (1 days: 0 verified, 1 reopened)" in run("--reconcile")
    row = DailyCoverage.objects.get(chat_id=CHAT, day=YESTERDAY, category="messages")
    assert row.reason == "word_count_mismatch"


def test_the_reconciliation_is_scheduled_every_minute(counters: KVStore) -> None:
    spec = next(spec for spec in SCHEDULES if spec.name == "stats_reconcile")
    assert spec in declared_schedules() and spec.minutes == 1
    assert spec.func == "stats.tasks.reconcile_tick"
    assert reconcile_tick() == "idle"
