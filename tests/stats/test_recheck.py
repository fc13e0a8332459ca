"""A verified day that got a late message is not served as verified until a verification has
seen that message (``stats.recheck``): the API (the dashboard's data), the coverage route and
the daily CSV all say "checking", from the KV commit until the reconciliation or finalize has
verified the day again.

The real case: a web process killed with SIGKILL between a late message's KV commit and its
database add (tests/stats/crash_child.py). With Redis the commit stands, the day's database
figures are one message short, and nothing but the recheck mark tells the reads so before the
reconciliation's next run.
"""

from __future__ import annotations

import csv
import io
import signal
import time
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.utils import translation

from stats import keys
from stats.backfill import backfill_run
from stats.config import counting_config
from stats.counting import MessageFacts, counting_ops
from stats.live_writer import RowDelta, count_once
from stats.recheck import recheck_pending, rechecks_done
from stats.reconcile import reconcile_run
from stats.selectors import SOURCE_LABELS, stats_report
from telegram_bot.state import KVStore
from tests.fakes.telegram import FakeTelegramServer
from tests.stats.conversation import Conversation, configure_rules
from tests.stats.kvseed import seed_day
from tests.stats.test_crash import redis_shared, run_child
from tests.stats.truth import assert_report_matches

__all__ = ["redis_shared"]  # the fixture, used by name below
pytestmark = pytest.mark.timeout(300)
CHAT = -100881
TODAY = datetime.now(UTC).date()
D1 = TODAY - timedelta(days=1)


def sources(admin_client: Any, chat_id: int, start: date, end: date) -> dict[str, dict[date, str]]:
    """Each day's source as the report (the dashboard's data), the coverage route and the
    daily CSV serve it."""
    params = {"chat_id": chat_id, "start": start, "end": end}
    report = admin_client.get("/api/v1/stats/report", {**params, "limit": 1000}).json()
    coverage = admin_client.get("/api/v1/stats/coverage", params).json()
    response = admin_client.get("/admin/stats/daily.csv", params)
    assert response.status_code == 200
    rows = list(csv.DictReader(io.StringIO(response.content.decode("utf-8-sig"))))
    return {
        "report": {date.fromisoformat(d["day"]): d["source"] for d in report["days"]},
        "coverage": {date.fromisoformat(d["day"]): d["source"] for d in coverage},
        "csv": {date.fromisoformat(row["day"]): row["source"] for row in rows},
    }


@pytest.mark.django_db(transaction=True)  # the processes share the test database
def test_a_day_whose_late_add_died_with_its_process_is_never_served_as_verified(
    redis_shared: KVStore,
    post_update: Any,
    admin_client: Any,
    fake_telegram: FakeTelegramServer,
) -> None:
    store = redis_shared
    days = [TODAY - timedelta(days=n) for n in (2, 1, 0)]
    configure_rules()
    conversation = Conversation(seed=39, days=days, now=int(time.time()), messages=40)
    for update in conversation.updates:
        assert post_update(update).status_code == 200
    assert backfill_run(force=True).outcome == "done"
    chat_id = next(c for c in conversation.chats if conversation.truth.totals[(c, days[1])])
    before = sources(admin_client, chat_id, days[0], days[1])
    assert set(before["report"].values()) <= {"database", "none"}
    assert before["report"][days[1]] == "database"

    late = conversation.late_message(chat_id, days[1], conversation.users[0], words=3)
    code, answered = run_child(store, fake_telegram.base_url, [late], late["update_id"])
    assert code == -signal.SIGKILL and answered == []  # killed after the KV commit
    # Telegram had no answer: it delivers the update again; the commit stood (Redis).
    code, answered = run_child(store, fake_telegram.base_url, [late], None)
    assert code == 0 and answered == [(late["update_id"], "duplicate")]

    served = sources(admin_client, chat_id, days[0], days[1])
    for route in ("report", "coverage", "csv"):
        assert served[route][days[1]] == "checking", (route, served[route])
        assert served[route][days[0]] == before[route][days[0]]
    body = admin_client.get(
        "/api/v1/stats/report",
        {"chat_id": chat_id, "start": days[1], "end": days[1], "limit": 1000},
    ).json()
    (day,) = body["days"]
    truth = sum(c["messages"] for c in conversation.truth.day_of(chat_id, days[1]).values())
    # The database is one message short, and the KV daily total says so beside it.
    assert (day["messages"], day["live_total"]) == (truth - 1, truth)

    assert reconcile_run(store=store).outcome == "done"
    served = sources(admin_client, chat_id, days[0], days[1])
    assert {route: by_day[days[1]] for route, by_day in served.items()} == dict.fromkeys(
        ("report", "coverage", "csv"), "database"
    )
    body = admin_client.get(
        "/api/v1/stats/report",
        {"chat_id": chat_id, "start": days[0], "end": days[1], "limit": 1000},
    ).json()
    assert_report_matches(body, conversation.truth, chat_id)


# --- the marks, in process ------------------------------------------------------------------
def late_commit(store: KVStore, day: date, user_id: int, message_id: int) -> bool:
    """A late message counted as the update path counts it: its KV commit (with the recheck
    mark) under the day's lock, its database add."""
    ts = int(datetime(day.year, day.month, day.day, 13, tzinfo=UTC).timestamp())
    facts = MessageFacts(CHAT, user_id, message_id, ts, "text", words=2)
    ops = counting_ops(facts, counting_config())
    row = RowDelta(CHAT, day, user_id, facts.deltas())
    marker = f"upd:{CHAT}:{message_id}"
    return count_once(store=store, commit=lambda: store.apply_once(marker, 1, ops), rows=[row])


def source(store: KVStore, day: date) -> str:
    report = stats_report(chat_id=CHAT, start=day, end=day, store=store, today=TODAY, zone=UTC)
    return report.days[0].source


@pytest.mark.django_db(transaction=True)
def test_a_late_message_whose_add_went_through_is_checking_until_the_reconciliation(
    memory_store: KVStore,
) -> None:
    seed_day(memory_store, CHAT, D1, 1, messages=2, words=2, hours={13: 2})
    assert backfill_run(store=memory_store).outcome == "done"
    assert source(memory_store, D1) == "database"
    assert late_commit(memory_store, D1, 2, 501)
    assert source(memory_store, D1) == "checking"  # right, but not verified with it yet
    assert reconcile_run(store=memory_store).outcome == "done"
    assert source(memory_store, D1) == "database"
    mark = memory_store.get(keys.recheck_key(CHAT, D1))
    assert mark is not None and not recheck_pending(mark)


@pytest.mark.django_db(transaction=True)
def test_a_late_message_after_the_verification_read_its_mark_stays_pending(
    memory_store: KVStore,
) -> None:
    """The verification read the mark under the day's lock; a late message counted after it
    released the lock (before the mark was retired) is not in that verdict: its own mark
    survives the retirement."""
    seed_day(memory_store, CHAT, D1, 1, messages=2, words=2, hours={13: 2})
    assert backfill_run(store=memory_store).outcome == "done"
    assert late_commit(memory_store, D1, 2, 601)
    seen = memory_store.get(keys.recheck_key(CHAT, D1))
    assert late_commit(memory_store, D1, 3, 602)  # after the read, before the retirement
    rechecks_done(memory_store, [(CHAT, D1, seen)])
    assert source(memory_store, D1) == "checking"
    assert reconcile_run(store=memory_store).outcome == "done"
    assert source(memory_store, D1) == "database"


@pytest.mark.django_db(transaction=True)
def test_finalize_retires_the_marks_of_the_days_it_verifies(memory_store: KVStore) -> None:
    seed_day(memory_store, CHAT, D1, 1, messages=2, words=2, hours={13: 2})
    assert backfill_run(store=memory_store).outcome == "done"
    assert late_commit(memory_store, D1, 2, 701)
    assert source(memory_store, D1) == "checking"
    assert backfill_run(store=memory_store, force=True).outcome == "done"
    assert source(memory_store, D1) == "database"


@pytest.mark.django_db(transaction=True)
def test_a_local_day_with_a_part_being_checked_is_being_checked(memory_store: KVStore) -> None:
    """UTC+3: the local day D1 is the tail of the stored day before it and the head of D1."""
    moscow = ZoneInfo("Europe/Moscow")
    for day in (D1 - timedelta(days=1), D1):
        seed_day(memory_store, CHAT, day, 1, messages=2, words=2, hours={13: 2})
    assert backfill_run(store=memory_store).outcome == "done"
    assert late_commit(memory_store, D1 - timedelta(days=1), 2, 801)
    report = stats_report(
        chat_id=CHAT, start=D1, end=D1, store=memory_store, today=TODAY, zone=moscow
    )
    assert report.days[0].source == "checking"


def test_the_label_says_being_checked_in_english_and_russian() -> None:
    with translation.override("en"):
        assert "being checked" in str(SOURCE_LABELS["checking"])
    with translation.override("ru"):
        assert "проверяется" in str(SOURCE_LABELS["checking"])
