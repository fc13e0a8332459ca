"""The live writer against the backfill, with real threads (issue 17, defects 1, 2 and 4).

Late messages for closed days (and re-deliveries of them) go through the webhook while the
backfill runs, on every KV backend and on the suite's database (PostgreSQL or SQLite); a KV
store that pauses at random before reads and around commits makes the two interleave
differently on every run. Each test ends with every cell equal to a ground truth the test
computed itself (tests/stats/conversation.py) and no day verified that is not right.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client

from stats.backfill import Limits, backfill_run, state_get
from stats.models import CATEGORIES, DailyCoverage
from stats.reconcile import reconcile_run
from telegram_bot.state import KVStore, override_store
from telegram_bot.state.base import RawOp
from tests.conftest import WEBHOOK_SECRET
from tests.locks import wait_until_waiting_for_a_lock
from tests.stats.conversation import Conversation, configure_rules
from tests.stats.jitter import JitterStore
from tests.stats.truth import assert_report_matches, assert_rows, db_rows, truth_rows

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]
SMALL = Limits(max_keys=7, max_reads=40, max_statements=13)


@pytest.fixture
def days() -> list[date]:
    today = datetime.now(UTC).date()
    return [today - timedelta(days=n) for n in (3, 2, 1, 0)]


def post(client: Client, update: dict[str, Any]) -> str:
    response = client.post(
        "/telegram/webhook",
        data=json.dumps(update),
        content_type="application/json",
        HTTP_X_TELEGRAM_BOT_API_SECRET_TOKEN=WEBHOOK_SECRET,
    )
    assert response.status_code == 200, response.content
    return str(response["X-Update-Outcome"])


def in_thread(target: Callable[[], None], errors: list[BaseException]) -> threading.Thread:
    def run() -> None:
        try:
            target()
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def late_messages(conversation: Conversation, days: list[date], rng: random.Random) -> list[Any]:
    """120 messages for two closed days of one chat, from two members (a few rows the backfill
    rewrites again and again while they arrive), 10 of them delivered twice, shuffled."""
    late = [
        conversation.late_message(
            conversation.chats[0],
            rng.choice(days[1:3]),
            rng.choice(conversation.users[:2]),
            words=rng.randint(1, 6),
        )
        for _ in range(120)
    ]
    late += [rng.choice(late) for _ in range(10)]
    rng.shuffle(late)
    return late


def assert_verified_days_right(conversation: Conversation) -> int:
    """Every day with a complete category equals the truth in every cell; how many."""
    verified = set(
        DailyCoverage.objects.filter(status="complete").values_list("chat_id", "day").distinct()
    )
    actual, expected = db_rows(), truth_rows(conversation.truth)
    for chat_id, day in verified:
        assert {k: v for k, v in actual.items() if k[:2] == (chat_id, day)} == {
            k: v for k, v in expected.items() if k[:2] == (chat_id, day)
        }, (chat_id, day)
    return len(verified)


def assert_closed_days_verified(conversation: Conversation, today: date) -> None:
    for chat_id, day in conversation.truth.totals:
        if day < today:
            statuses = dict(
                DailyCoverage.objects.filter(chat_id=chat_id, day=day).values_list(
                    "category", "status"
                )
            )
            assert statuses == dict.fromkeys(CATEGORIES, "complete"), (chat_id, day, statuses)


@pytest.mark.parametrize("seed", [11, 12])
def test_the_backfill_and_late_messages_for_closed_days_lose_or_double_nothing(
    wired: KVStore, post_update: Any, admin_client: Any, days: list[date], seed: int
) -> None:
    configure_rules()
    # A small conversation, so that the backfill rewrites the rows of the late messages often.
    conversation = Conversation(seed=seed, days=days, now=int(time.time()), messages=40)
    for update in conversation.updates:
        assert post_update(update).status_code == 200
    rng = random.Random(seed)
    late = late_messages(conversation, days, rng)
    jitter = JitterStore(wired, seed=seed, max_pause=0.001, commit_pause=0.01)
    errors: list[BaseException] = []
    runs: list[str] = []

    def deliver_late() -> None:
        client = Client()
        for update in late:
            post(client, update)

    with override_store(jitter):
        sender = in_thread(deliver_late, errors)

        def keep_backfilling() -> None:
            # Whole runs, one after the other, for as long as late messages arrive.
            while sender.is_alive() or not runs:
                runs.append(backfill_run(limits=SMALL, force=True, store=jitter).outcome)

        backfiller = in_thread(keep_backfilling, errors)
        sender.join(240)
        backfiller.join(240)
    assert not errors, errors
    assert runs and set(runs) == {"done"}

    # No interleaving lost or doubled an increment: every cell is right already.
    assert_rows(db_rows(), truth_rows(conversation.truth))
    assert_verified_days_right(conversation)
    # The reconciliation re-verifies the days that got late messages: all closed days are.
    assert reconcile_run(store=wired).outcome == "done"
    assert_verified_days_right(conversation)
    assert_closed_days_verified(conversation, days[-1])
    for chat_id in conversation.chats:
        params = {"chat_id": chat_id, "start": days[0], "end": days[-1], "limit": 1000}
        body = admin_client.get("/api/v1/stats/report", params).json()
        assert_report_matches(body, conversation.truth, chat_id)
        assert [day["source"] for day in body["days"]] == expected_sources(
            conversation, chat_id, days
        )


def expected_sources(conversation: Conversation, chat_id: int, days: list[date]) -> list[str]:
    """Closed days with messages verified, today live, days without messages none."""
    return [
        ("live" if day == days[-1] else "database")
        if conversation.truth.totals[(chat_id, day)]
        else "none"
        for day in days
    ]


class GateStore(JitterStore):
    """Once armed, the next KV commit applies and then waits for ``go``: a live write in
    flight between its KV commit and its database add."""

    def __init__(self, inner: KVStore) -> None:
        super().__init__(inner, seed=0, max_pause=0)
        self.armed = False
        self.committed, self.go = threading.Event(), threading.Event()

    def _apply_once(
        self, raw_marker: str, marker_text: str, marker_ttl_ms: int | None, ops: list[RawOp]
    ) -> bool:
        done = self.inner._apply_once(raw_marker, marker_text, marker_ttl_ms, ops)
        if self.armed:
            self.armed = False
            self.committed.set()
            assert self.go.wait(60)
        return done


def test_a_finalize_during_an_in_flight_write_verifies_the_day_with_it(
    wired: KVStore, post_update: Any, admin_client: Any, days: list[date]
) -> None:
    configure_rules()
    conversation = Conversation(seed=21, days=days, now=int(time.time()), messages=90)
    for update in conversation.updates:
        assert post_update(update).status_code == 200
    gate = GateStore(wired)
    with override_store(gate):
        while (state := state_get()) is None or state.phase != "finalize":
            backfill_run(owner="F", limits=SMALL, force=True, store=gate, max_slices=1)
        chat_id, day, user_id = conversation.chats[0], days[1], conversation.users[0]
        late = conversation.late_message(chat_id, day, user_id, words=4)
        errors: list[BaseException] = []
        runs: list[str] = []
        gate.armed = True
        writer = in_thread(lambda: post(Client(), late) and None, errors)
        assert gate.committed.wait(60)  # the KV commit is done, the database add is not
        finalizer = in_thread(
            lambda: runs.append(backfill_run(owner="F", limits=SMALL, store=gate).outcome),
            errors,
        )
        wait_until_waiting_for_a_lock(finalizer, "the finalizer")
        gate.go.set()
        writer.join(60)
        finalizer.join(60)
    assert not errors, errors
    assert runs == ["done"]
    # Finalize verified the day with the late message in both stores, not a moment between.
    statuses = set(
        DailyCoverage.objects.filter(chat_id=chat_id, day=day).values_list("status", flat=True)
    )
    assert statuses == {"complete"}
    assert_rows(db_rows(), truth_rows(conversation.truth))
    assert_verified_days_right(conversation)
    params = {"chat_id": chat_id, "start": days[0], "end": days[-1], "limit": 1000}
    body = admin_client.get("/api/v1/stats/report", params).json()
    assert_report_matches(body, conversation.truth, chat_id)
    assert body["days"][1]["source"] == "database"
