"""What reading statistics costs the KV store: no scans at all (on Redis a SCAN MATCH walks the
whole keyspace), and a bounded number of gets that grows neither with unrelated keys nor with
the length of the range.

Every KV call of the store under test is counted (its ``_scan`` and ``_get`` primitives,
wrapped with ``monkeypatch``), on every backend.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from django.db import OperationalError, connection

from stats import keys
from stats.backfill import backfill_run
from stats.summary import group_summary_text
from telegram_bot.state import KVStore
from tests.builders import make_message_update

GROUP = -100777
UNRELATED = 400  # msg: keys of another chat, and other apps' keys


class KVCalls:
    """Counts the store's scan pages and reads from now on (a ``get_many`` counts as many
    gets as it has keys: on the memory store each is one)."""

    def __init__(self, store: KVStore, monkeypatch: pytest.MonkeyPatch) -> None:
        self.scans = self.gets = self.round_trips = 0
        scan, get, get_many = store._scan, store._get, store._get_many

        def counted_scan(*args: Any) -> Any:
            self.scans += 1
            return scan(*args)

        def counted_get(*args: Any) -> Any:
            self.gets += 1
            self.round_trips += 1
            return get(*args)

        def counted_get_many(raw_keys: list[str]) -> Any:
            self.gets += len(raw_keys)
            self.round_trips += 1
            return get_many(raw_keys)

        monkeypatch.setattr(store, "_scan", counted_scan)
        monkeypatch.setattr(store, "_get", counted_get)
        monkeypatch.setattr(store, "_get_many", counted_get_many)

    def reset(self) -> None:
        self.scans = self.gets = self.round_trips = 0


def today() -> date:
    return datetime.now(UTC).date()


def noon(day: date) -> int:
    return int(datetime(day.year, day.month, day.day, 12, tzinfo=UTC).timestamp())


def say(post_update: Any, user_id: int, text: str, *, ts: int | None = None) -> None:
    ts = ts if ts is not None else int(time.time())
    update = make_message_update(
        text, chat_id=GROUP, user_id=user_id, chat_type="supergroup", date=ts
    )
    response = post_update(update)
    assert response.status_code == 200 and response["X-Update-Outcome"] == "processed"


def unrelated_keys(store: KVStore, count: int = UNRELATED) -> None:
    for n in range(count):
        store.set(f"msg:-100999:{1_700_000_000 + n}:{n}", {"u": 1, "k": "text", "w": 1})


def report(client: Any, start: date, end: date) -> dict[str, Any]:
    params = {"chat_id": GROUP, "start": start, "end": end, "limit": 100}
    response = client.get("/api/v1/stats/report", params)
    assert response.status_code == 200, response.content
    return response.json()


def fail_on(prefix: str) -> Callable[..., Any]:
    def wrapper(execute: Callable[..., Any], sql: str, params: Any, many: bool, ctx: Any) -> Any:
        if prefix in sql:  # the live writer sends its lock and add as one statement
            raise OperationalError("the database went away")
        return execute(sql, params, many, ctx)

    return wrapper


def test_stats_in_a_group_scans_nothing(
    wired: KVStore, post_update: Any, fake_telegram: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    unrelated_keys(wired)
    say(post_update, 1, "one two three")
    say(post_update, 1, "four")
    say(post_update, 2, "five")
    calls = KVCalls(wired, monkeypatch)

    say(post_update, 3, "/stats")

    assert calls.scans == 0
    (reply,) = [call.params["text"] for call in fake_telegram.calls_to("sendMessage")]
    assert reply.split("\n\n")[0].splitlines()[1:] == [
        "1. Test - 2 messages, 4 words",
        "2. Test - 1 message, 1 word",
    ]
    calls.reset()
    group_summary_text(chat_id=GROUP, store=wired)
    # At most 2 gets a day of the week (the failed-writes index, the KV daily total) and one
    # per ranked member without a hydrated profile: nothing that grows with the keyspace.
    assert calls.scans == 0 and calls.gets <= 2 * 7 + 2


def test_a_year_of_dashboard_costs_no_scan_and_no_more_gets_than_the_counters_lifetime(
    wired: KVStore, post_update: Any, admin_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    unrelated_keys(wired)
    yesterday = today() - timedelta(days=1)
    say(post_update, 1, "hello there", ts=noon(yesterday))
    say(post_update, 2, "hi")
    assert backfill_run(owner="t", force=True).outcome == "done"  # yesterday: verified
    calls = KVCalls(wired, monkeypatch)

    body = report(admin_client, today() - timedelta(days=365), today())
    year = calls.gets
    assert calls.scans == 0
    # The failed-writes indexes in one get_many, today's total, the members' last messages.
    assert calls.round_trips <= 4, calls.round_trips
    assert [(d["day"], d["messages"], d["source"]) for d in body["days"][-2:]] == [
        (yesterday.isoformat(), 1, "database"),
        (today().isoformat(), 1, "live"),
    ]
    assert {d["source"] for d in body["days"][:-2]} == {"none"}

    calls.reset()
    report(admin_client, today() - timedelta(days=90), today())
    assert calls.scans == 0 and calls.gets == year  # days past the counters' lifetime: free
    unrelated_keys(wired, 2 * UNRELATED)
    calls.reset()
    report(admin_client, today() - timedelta(days=365), today())
    assert calls.scans == 0 and calls.gets == year
    # One get per day the counters may still hold (the failed-writes index), one more for the
    # days not verified (the daily total), one per member without a profile.
    assert year <= 62 + 2 + 2


def test_poisoned_days_are_repaired_from_the_kv_counters_with_gets_only(
    wired: KVStore, post_update: Any, admin_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    unrelated_keys(wired)
    yesterday = today() - timedelta(days=1)
    say(post_update, 1, "a b c", ts=noon(yesterday))
    say(post_update, 2, "d", ts=noon(yesterday))
    say(post_update, 1, "today one")
    assert backfill_run(owner="t", force=True).outcome == "done"  # yesterday: verified
    with connection.execute_wrapper(fail_on("INSERT INTO stats_daily_user")):
        say(post_update, 2, "late for yesterday", ts=noon(yesterday) + 60)  # coverage: poisoned
        say(post_update, 3, "today two three")
    with connection.execute_wrapper(fail_on("INSERT INTO stats_")):
        say(post_update, 1, "gone", ts=noon(yesterday) + 120)  # the KV store alone knows
    calls = KVCalls(wired, monkeypatch)

    body = report(admin_client, yesterday, today())

    assert calls.scans == 0 and calls.gets <= 40
    (closed, live) = body["days"]
    assert (closed["messages"], closed["words"], closed["members"]) == (4, 8, 2)
    assert (live["messages"], live["words"], live["members"]) == (2, 5, 2)
    assert closed["source"] == live["source"] == "live"  # not the database's verified numbers
    assert {"messages", "words", "hours"} <= set(closed["poisoned"]) == set(live["poisoned"])
    assert "KV counters" in closed["source_label"]
    members = {m["user_id"]: (m["messages"], m["words"]) for m in body["members"]}
    assert members == {1: (3, 6), 2: (2, 4), 3: (1, 3)}


def test_it_never_reads_days_after_today(
    wired: KVStore, admin_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = KVCalls(wired, monkeypatch)
    body = report(admin_client, today() - timedelta(days=1), today() + timedelta(days=300))
    assert body["end"] == today().isoformat()
    assert [d["day"] for d in body["days"]] == [
        (today() - timedelta(days=1)).isoformat(),
        today().isoformat(),
    ]
    assert calls.scans == 0 and calls.gets <= 3
    for n in range(1, 4):  # a future day in the store (a wrong clock) is not read either
        wired.increment(keys.counter_key(keys.MESSAGES, GROUP, today() + timedelta(days=n), 1))
    assert report(admin_client, today(), today() + timedelta(days=3))["days"][-1]["day"] == (
        today().isoformat()
    )
