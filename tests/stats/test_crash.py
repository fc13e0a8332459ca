"""A web process killed (SIGKILL) between the KV commit and the database add (issue 17,
defect 3), with real processes on the test database and a KV store they share.

Telegram gets no answer for the update in flight and delivers it again, to the next process.
With Redis the commit stands (the re-delivery answers ``duplicate``) and the database misses
the increment: the reconciliation finds the closed days from their late markers and repairs
them; today's day is rebuilt by the backfill once it closes. With the database KV store the
commit was in the killed transaction: nothing stands, and the re-delivery counts it.
Every cell ends equal to the test's ground truth, and no day is ever left verified and wrong
once the reconciliation has run.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from stats.backfill import backfill_run
from stats.models import DailyCoverage
from stats.reconcile import reconcile_run
from telegram_bot.state import KVStore, override_store
from tests.conftest import OWNER_ID, WEBHOOK_SECRET, make_store
from tests.content.test_processes import database_url
from tests.fakes.telegram import FakeTelegramServer
from tests.stats.conftest import anti_flood, wire_stats
from tests.stats.conversation import Conversation, configure_rules
from tests.stats.test_ordering import assert_closed_days_verified, assert_verified_days_right
from tests.stats.truth import assert_report_matches, assert_rows, db_rows, truth_rows

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]
KILLS = 6


@pytest.fixture
def shared(
    fake_telegram: FakeTelegramServer, settings: Any, shared_kv: KVStore
) -> Iterator[KVStore]:
    wire_stats(settings, fake_telegram)
    with override_store(shared_kv):
        yield shared_kv


def child_env(
    store: KVStore, base_url: str, kill_at: int | None, extra: dict[str, str] | None = None
) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "TELEGRAM_"))}
    for name in ("DATABASE_URL", "ADMIN_TELEGRAM_IDS", "ALLOWED_CHAT_IDS"):
        keep.pop(name, None)
    return {
        **keep,
        "DJANGO_SETTINGS_MODULE": "config.settings_test",
        "DJANGO_ALLOWED_HOSTS": "testserver",  # the host of django.test.Client
        "DATABASE_URL": database_url(),
        "TELEGRAM_API_BASE_URL": base_url,
        "TELEGRAM_BOT_TOKEN": "123456789:TEST-token-for-the-fake-bot-api-000000",
        "TELEGRAM_WEBHOOK_SECRET": WEBHOOK_SECRET,
        "OWNER_TELEGRAM_ID": str(OWNER_ID),
        "DJANGO_SECRET_KEY": "stats-crash-tests-secret-key-0123456789-abcdefghijklmnopqrst",
        "UPDATE_CLAIM_TTL_SECONDS": "5",  # a killed process's claim on its update expires
        "STATS_CHILD_KV_URL": store.url,
        "STATS_CHILD_KV_PREFIX": store.prefix,
        "STATS_CHILD_KILL_AT": str(kill_at or ""),
        **(extra or {}),
    }


def run_child(
    store: KVStore,
    base_url: str,
    updates: list[dict[str, Any]],
    kill_at: int | None,
    extra: dict[str, str] | None = None,
) -> tuple[int, list[tuple[int, str]]]:
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.stats.crash_child"],
        cwd=ROOT,
        env=child_env(store, base_url, kill_at, extra),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, err = child.communicate(json.dumps(updates), timeout=180)
    answered = [(int(line.split()[0]), line.split()[1]) for line in out.splitlines() if line]
    assert child.returncode in (0, -signal.SIGKILL), err
    return child.returncode, answered


def delivered_and_verified(
    post_update: Any, *, seed: int, messages: int
) -> tuple[date, list[date], Conversation]:
    """A conversation over the last four days (today's included) through the webhook, and a
    backfill that verifies its closed days."""
    today = datetime.now(UTC).date()
    days = [today - timedelta(days=n) for n in (3, 2, 1, 0)]
    configure_rules()
    conversation = Conversation(seed=seed, days=days, now=int(time.time()), messages=messages)
    for update in conversation.updates:
        assert post_update(update).status_code == 200
    assert backfill_run(force=True).outcome == "done"
    assert_closed_days_verified(conversation, today)
    return today, days, conversation


def late_messages(
    conversation: Conversation, days: list[date], rng: random.Random, count: int
) -> list[dict[str, Any]]:
    """Late messages for the closed days and today."""
    return [
        conversation.late_message(
            rng.choice(conversation.chats),
            rng.choice(days),
            rng.choice(conversation.users),
            words=rng.randint(1, 5),
        )
        for _ in range(count)
    ]


def assert_repaired(
    store: KVStore, conversation: Conversation, days: list[date], admin_client: Any
) -> date:
    """The reconciliation repairs the closed days at once (the late markers name them) and
    the report shows them right; once today closes, the next backfill rebuilds it from the
    counters. Returns that next day."""
    today = days[-1]
    assert reconcile_run(store=store).outcome == "done"
    assert_rows(db_rows(before=today), truth_rows(conversation.truth, before=today))
    assert_closed_days_verified(conversation, today)
    assert_verified_days_right(conversation)
    for chat_id in conversation.chats:
        params = {"chat_id": chat_id, "start": days[0], "end": days[-2], "limit": 1000}
        body = admin_client.get("/api/v1/stats/report", params).json()
        assert_report_matches(body, conversation.truth, chat_id)
    tomorrow = today + timedelta(days=1)
    assert backfill_run(force=True, today=tomorrow).outcome == "done"
    assert_rows(db_rows(), truth_rows(conversation.truth))
    assert_verified_days_right(conversation)
    return tomorrow


def test_a_process_killed_between_the_kv_commit_and_the_database_add_loses_nothing(
    shared: KVStore,
    post_update: Any,
    admin_client: Any,
    fake_telegram: FakeTelegramServer,
) -> None:
    _, days, conversation = delivered_and_verified(post_update, seed=31, messages=90)
    # Anti-flood at its lowest: the one step often meets its trigger, commits nothing and
    # leaves a claim; the kill must still fall after a commit that applied.
    anti_flood(fake_telegram, conversation.chats, seconds=3600)
    rng = random.Random(31)
    late = late_messages(conversation, days, rng, 40)
    sent: Counter[tuple[int, int]] = Counter()
    at_trigger = []  # the third message of a member in a chat: its one step meets the trigger
    for index, update in enumerate(late):
        pair = (update["message"]["chat"]["id"], update["message"]["from"]["id"])
        sent[pair] += 1
        if sent[pair] == 3:
            at_trigger.append(index)
    others = [index for index in range(len(late)) if index != at_trigger[0]]
    doomed = sorted([at_trigger[0], *rng.sample(others, KILLS - 1)])
    killed: list[int] = []
    pending, outcomes = late, {}
    while pending:
        upcoming = [late[i]["update_id"] for i in doomed if late[i]["update_id"] not in killed]
        kill_at = upcoming[0] if upcoming else None
        code, answered = run_child(shared, fake_telegram.base_url, pending, kill_at)
        outcomes.update(answered)
        if kill_at is None:
            assert code == 0 and len(answered) == len(pending)
            break
        assert code == -signal.SIGKILL and kill_at not in dict(answered)
        killed.append(kill_at)
        # No answer reached Telegram: it delivers the update again, then the rest.
        pending = pending[len(answered) :]
        assert pending[0]["update_id"] == kill_at
    assert len(killed) == KILLS
    redis = not shared.url.startswith("db:")
    # With Redis the killed update's commit stood; with the database store it was rolled back.
    assert {outcomes[update_id] for update_id in killed} == {"duplicate" if redis else "processed"}
    if redis:
        assert db_rows() != truth_rows(conversation.truth)  # the adds were lost...

    tomorrow = assert_repaired(shared, conversation, days, admin_client)
    assert_closed_days_verified(conversation, tomorrow)
    assert not DailyCoverage.objects.filter(reason__gt="").exists()


@pytest.fixture
def redis_shared(
    request: pytest.FixtureRequest, fake_telegram: FakeTelegramServer, settings: Any
) -> Iterator[KVStore]:
    """Redis shared with the children (the write-behind needs a KV store outside the
    database)."""
    for store in make_store(request, "redis"):
        wire_stats(settings, fake_telegram)
        with override_store(store):
            yield store


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the write-behind is PostgreSQL's")
def test_a_process_killed_with_answered_adds_still_in_its_epoch_loses_nothing(
    redis_shared: KVStore,
    post_update: Any,
    admin_client: Any,
    fake_telegram: FakeTelegramServer,
) -> None:
    """The write-behind's worst case: a process killed with every add since it started still
    in its epoch (its flusher held back), each time right after answering an update. Telegram
    got the answers, so nothing is delivered again. Late messages (closed days) are added
    before their answer, never in an epoch: those days are right at once. Today's adds that
    were in the killed epochs are in the KV store only, as for a process killed between its
    two writes, and today is rebuilt from the counters once it closes."""
    store = redis_shared
    today, days, conversation = delivered_and_verified(post_update, seed=37, messages=60)
    rng = random.Random(37)
    late = late_messages(conversation, days, rng, 30)
    doomed = [late[i]["update_id"] for i in sorted(rng.sample(range(len(late)), 3))]
    epochs = {"STATS_WRITE_BEHIND_MS": "1000", "STATS_CHILD_NO_FLUSHER": "1"}
    pending, outcomes = late, {}
    for kill_after in [*doomed, None]:
        extra = {**epochs, "STATS_CHILD_KILL_AFTER_ANSWER": str(kill_after or "")}
        code, answered = run_child(store, fake_telegram.base_url, pending, None, extra)
        outcomes.update(answered)
        if kill_after is None:
            assert code == 0 and len(answered) == len(pending)
            break
        assert code == -signal.SIGKILL and answered[-1][0] == kill_after
        pending = pending[len(answered) :]
    assert set(outcomes.values()) == {"processed"} and len(outcomes) == len(late)
    assert db_rows() != truth_rows(conversation.truth)  # today's adds in the epochs were lost
    assert_rows(db_rows(before=today), truth_rows(conversation.truth, before=today))
    assert_repaired(store, conversation, days, admin_client)
