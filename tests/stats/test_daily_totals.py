"""The read totals of verified days (``stats_daily_totals``): written when finalize or the
reconciliation verify a day, read by the dashboard instead of summing the day's rows, and
dropped by any later write to the day's rows (the triggers of migration 0005), never by a
write to today's rows."""

from __future__ import annotations

import io
import time
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from stats import aggregates
from stats.backfill import backfill_run
from stats.backfill.sql import Fenced
from stats.models import DailyTotals, DailyUserStat
from stats.privacy import erase
from stats.reconcile import reconcile_run
from stats.totals import day_totals_write
from telegram_bot.models import ChatPreference
from telegram_bot.privacy import Subject
from telegram_bot.state import KVStore
from tests.builders import make_message_update

GROUP = -100888


def today() -> date:
    return datetime.now(UTC).date()


def at(day: date, hour: int) -> int:
    return int(datetime(day.year, day.month, day.day, hour, 30, tzinfo=UTC).timestamp())


def say(post_update: Any, user_id: int, text: str, ts: int, chat_id: int = GROUP) -> None:
    update = make_message_update(
        text, chat_id=chat_id, user_id=user_id, chat_type="supergroup", date=ts
    )
    assert post_update(update)["X-Update-Outcome"] == "processed"


def days(client: Client, start: date, end: date, chat_id: int = GROUP) -> list[dict[str, Any]]:
    query = {"chat_id": chat_id, "start": start, "end": end}
    response = client.get("/api/v1/stats/report", query)
    assert response.status_code == 200, response.content
    return list(response.json()["days"])


def verified_two_days(post_update: Any) -> tuple[date, date]:
    """Messages two days ago and yesterday (UTC), verified by a backfill run; today live."""
    yesterday = today() - timedelta(days=1)
    before = yesterday - timedelta(days=1)
    say(post_update, 1, "one two", at(before, 10))
    say(post_update, 2, "three", at(before, 23))
    say(post_update, 1, "four five six", at(yesterday, 8))
    say(post_update, 3, "seven", at(yesterday, 8))
    say(post_update, 1, "today", int(time.time()) - 1)
    assert backfill_run(owner="t", force=True).outcome == "done"
    return before, yesterday


def totals_of(day: date, chat_id: int = GROUP) -> DailyTotals | None:
    return DailyTotals.objects.filter(chat_id=chat_id, day=day).first()


def test_verifying_a_day_stores_what_the_reads_would_sum(wired: KVStore, post_update: Any) -> None:
    before, yesterday = verified_two_days(post_update)

    for day in (before, yesterday):
        stored = totals_of(day)
        assert stored is not None and (stored.zone, stored.cut) == ("UTC", 24)
        summed = aggregates.stored_days(GROUP, {day: aggregates.Split(day, 24)})[day]
        assert (stored.messages, stored.words, stored.active) == (
            summed.messages,
            summed.words,
            summed.active,
        )
        assert [getattr(stored, c) for c in aggregates.HOUR_COLUMNS] == summed.hours
    assert (totals_of(before).messages, totals_of(yesterday).active) == (2, 2)  # type: ignore[union-attr]
    assert totals_of(today()) is None  # today is never verified


def test_the_report_reads_the_stored_totals_of_verified_days(
    wired: KVStore, post_update: Any, admin_client: Client
) -> None:
    before, yesterday = verified_two_days(post_update)
    # A stored figure nothing else has: the report shows it, so it read the totals row (an
    # update of the totals table fires no trigger).
    DailyTotals.objects.filter(chat_id=GROUP, day=yesterday).update(messages=99, hour_08=98)

    with CaptureQueriesContext(connection) as queries:
        shown = days(admin_client, before, today())

    assert [(d["messages"], d["source"]) for d in shown] == [
        (2, "database"),
        (99, "database"),
        (1, "live"),
    ]
    # The rows are summed per day for today only.
    by_day = [q["sql"] for q in queries.captured_queries if "GROUP BY day" in q["sql"]]
    assert len(by_day) == 1 and yesterday.isoformat() not in by_day[0]
    assert today().isoformat() in by_day[0]


@pytest.mark.parametrize("write", ["late_message", "backfill", "erasure", "delete"])
def test_any_write_to_a_closed_day_drops_its_totals_and_the_next_days(
    wired: KVStore, post_update: Any, admin_client: Client, write: str
) -> None:
    before, yesterday = verified_two_days(post_update)
    assert totals_of(before) and totals_of(yesterday)
    messages = [d["messages"] for d in days(admin_client, before, today())]

    if write == "late_message":  # a live add to a verified day, before the reconciliation
        say(post_update, 4, "late", at(before, 12))
        messages[0] += 1
    elif write == "backfill":  # a backfill rewrite of a cell (never lower: nothing changes)
        with transaction.atomic(), connection.cursor() as cursor:
            Fenced(cursor, None, timezone.now()).aggregate_put(
                GROUP, before, 1, {"message_count": 1}
            )
    elif write == "erasure":  # member 2's numbers move to an anonymous id
        erase(Subject(user_id=2, anonymous_id=2**52 + 5, marker_prefix="lock:erase:t:"), wired)
    else:
        DailyUserStat.objects.filter(chat_id=GROUP, day=before, user_id=2).delete()
        messages[0] -= 1

    assert totals_of(before) is None and totals_of(yesterday) is None
    assert [d["messages"] for d in days(admin_client, before, today())] == messages


def test_the_reconciliation_stores_the_totals_again_after_a_late_message(
    wired: KVStore, post_update: Any, admin_client: Client
) -> None:
    _before, yesterday = verified_two_days(post_update)
    say(post_update, 4, "late one", at(yesterday, 20))
    assert totals_of(yesterday) is None

    assert reconcile_run(store=wired).outcome == "done"

    stored = totals_of(yesterday)
    assert stored is not None and (stored.messages, stored.words, stored.active) == (3, 6, 3)
    assert [(d["messages"], d["source"]) for d in days(admin_client, yesterday, yesterday)] == [
        (3, "database")
    ]


def test_writes_to_todays_rows_drop_nothing_and_today_gets_no_totals(
    wired: KVStore, post_update: Any
) -> None:
    _before, yesterday = verified_two_days(post_update)
    stored = totals_of(yesterday)
    say(post_update, 5, "now", int(time.time()) - 1)
    DailyUserStat.objects.filter(chat_id=GROUP, day=today()).update(word_count=50)

    assert totals_of(yesterday) == stored
    with transaction.atomic(), connection.cursor() as cursor:
        assert day_totals_write(cursor, GROUP, today()) is False
    assert totals_of(today()) is None


def test_totals_of_another_zone_are_not_used(
    wired: KVStore, post_update: Any, admin_client: Client
) -> None:
    _before, yesterday = verified_two_days(post_update)
    DailyTotals.objects.filter(chat_id=GROUP).update(messages=99)
    ChatPreference.objects.create(chat_id=GROUP, time_zone="Europe/Moscow")
    # At UTC+3 the local day ``yesterday`` is 21:00 UTC the day before to 20:59 UTC:
    # member 2's 23:30 message of ``before`` and both 08:30 messages of ``yesterday``.
    shown = days(admin_client, yesterday, yesterday)
    assert [(d["messages"], d["members"]) for d in shown] == [(3, 3)]


def test_a_split_zone_stores_the_parts_and_the_straddlers(
    wired: KVStore, post_update: Any, admin_client: Client
) -> None:
    chat_id = -100889
    ChatPreference.objects.create(chat_id=chat_id, time_zone="Europe/Moscow")
    yesterday = today() - timedelta(days=1)
    before = yesterday - timedelta(days=1)
    earlier = before - timedelta(days=1)
    for day in (earlier, before, yesterday):
        say(post_update, 1, "a b", at(day, 22), chat_id)  # 01:30 the next local day
        say(post_update, 1, "c", at(day, 10), chat_id)
        say(post_update, 2, "d e f", at(day, 22), chat_id)
    assert backfill_run(owner="t", force=True).outcome == "done"
    local = before  # its stored days: the tail of ``earlier`` and the head of ``before``
    with CaptureQueriesContext(connection) as queries:
        shown = days(admin_client, local, local, chat_id)

    assert [(d["messages"], d["words"], d["members"]) for d in shown] == [(3, 6, 2)]
    # Member 1 is in both parts, counted once: known from the stored straddlers, no self-join.
    assert not [q for q in queries.captured_queries if " JOIN stats_daily_user b" in q["sql"]]
    stored = totals_of(before, chat_id)
    assert stored is not None and (stored.zone, stored.cut) == ("Europe/Moscow", 21)
    assert (stored.tail_messages, stored.head_active, stored.tail_active) == (2, 1, 2)
    assert stored.straddlers == 1  # member 1: the tail of ``earlier`` and the head of ``before``


@pytest.mark.django_db
def test_the_command_stores_the_totals_of_verified_days_that_have_none() -> None:
    from django.core.management import call_command

    from stats.models import CATEGORIES, DailyCoverage

    yesterday = today() - timedelta(days=1)
    before = yesterday - timedelta(days=1)
    for day in (before, yesterday, today()):
        DailyUserStat.objects.create(
            chat_id=GROUP, day=day, user_id=1, message_count=3, word_count=5, hour_07=3
        )
        for category in CATEGORIES:  # verified, except ``before``'s hours and today
            status = "pending" if day == before and category == "hours" else "complete"
            DailyCoverage.objects.create(chat_id=GROUP, day=day, category=category, status=status)

    call_command("stats_totals", stdout=io.StringIO())

    stored = totals_of(yesterday)
    assert stored is not None and (stored.messages, stored.words, stored.hour_07) == (3, 5, 3)
    assert totals_of(before) is None and totals_of(today()) is None
    DailyTotals.objects.filter(day=yesterday).update(messages=7)
    out = io.StringIO()
    call_command("stats_totals", stdout=out)  # a day with totals is left alone
    assert totals_of(yesterday).messages == 7  # type: ignore[union-attr]
    assert "stored the totals of 0 verified days" in out.getvalue()
