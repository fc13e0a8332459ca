"""A Redis that restarts empty (killed, no persistence) under the product (issue 17).

The KV counters and totals of every day start again from zero; the database keeps what the
live writer added. Afterwards, late messages for closed days and today's messages arrive. The
backfill and the reconciliation must not lower the database to the KV store's smaller figures,
and must not call a day verified whose KV totals no longer account for its numbers: every
cell ends equal to the test's ground truth, and every day still verified is right.

Runs its own redis-server on a free port (never the shared one), on the suite's database.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from stats.backfill import backfill_run
from stats.models import CATEGORIES, DailyCoverage
from stats.reconcile import reconcile_run
from telegram_bot.state import KVStore, open_store, override_store
from tests.fakes.telegram import FakeTelegramServer
from tests.ports import free_port
from tests.redis_server import RedisServer, wait_redis_ready
from tests.stats.conftest import wire_stats
from tests.stats.conversation import Conversation, configure_rules
from tests.stats.test_ordering import assert_verified_days_right
from tests.stats.truth import assert_report_matches, assert_rows, db_rows, truth_rows

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(180),
    pytest.mark.skipif(not shutil.which("redis-server"), reason="redis-server not installed"),
]


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(free_port(), tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture
def own_store(
    redis_server: RedisServer, fake_telegram: FakeTelegramServer, settings: Any
) -> Iterator[KVStore]:
    wire_stats(settings, fake_telegram)
    store = open_store(f"redis://127.0.0.1:{redis_server.port}/0")
    wait_redis_ready(store)
    with override_store(store):
        yield store
    store.close()


def test_a_redis_that_restarts_empty_never_lowers_the_database_nor_verifies_a_short_day(
    own_store: KVStore, redis_server: RedisServer, post_update: Any, admin_client: Any
) -> None:
    today = datetime.now(UTC).date()
    days = [today - timedelta(days=n) for n in (4, 3, 2, 1, 0)]
    configure_rules()
    conversation = Conversation(seed=41, days=days, now=int(time.time()), messages=150)
    for update in conversation.updates:
        assert post_update(update).status_code == 200
    assert backfill_run(force=True).outcome == "done"

    redis_server.restart()  # every counter, total and done-marker is gone
    wait_redis_ready(own_store)
    assert own_store.get("stats:late") is None

    # After the restart: late messages for two closed days, and today's, some delivered twice.
    chat_id = conversation.chats[0]
    after = [
        conversation.late_message(chat_id, day, user_id, words=3)
        for day in (days[2], days[3], today)
        for user_id in conversation.users[:3]
    ]
    for update in after + after[::4]:
        assert post_update(update).status_code == 200
    touched = {(chat_id, days[2]), (chat_id, days[3])}

    assert_rows(db_rows(), truth_rows(conversation.truth))  # the live writer lost nothing
    reconcile_run(store=own_store)
    assert backfill_run(force=True).outcome == "done"
    assert backfill_run(force=True, today=today + timedelta(days=1)).outcome == "done"

    # Nothing was lowered to the KV store's figures, and every day still verified is right.
    assert_rows(db_rows(), truth_rows(conversation.truth))
    assert_verified_days_right(conversation)
    for pair in touched | {(chat_id, today)}:  # the KV totals no longer account for them
        rows = DailyCoverage.objects.filter(chat_id=pair[0], day=pair[1])
        assert {row.status for row in rows} != {"complete"}, pair
        assert rows.get(category="messages").reason.endswith("_mismatch"), pair
    for other_chat, day in conversation.truth.totals:  # untouched days stay verified
        if day < today and (other_chat, day) not in touched:
            statuses = dict(
                DailyCoverage.objects.filter(chat_id=other_chat, day=day).values_list(
                    "category", "status"
                )
            )
            assert statuses == dict.fromkeys(CATEGORIES, "complete"), (other_chat, day)
    params = {"chat_id": chat_id, "start": days[0], "end": today, "limit": 1000}
    body = admin_client.get("/api/v1/stats/report", params).json()
    assert_report_matches(body, conversation.truth, chat_id)
    sources = {date.fromisoformat(day["day"]): day["source"] for day in body["days"]}
    assert {sources[day] for _, day in touched} == {"database_unverified"}
