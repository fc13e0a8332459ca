"""The statistics read side: /stats fits one message; "last seen" counts
neither messages after the range nor misses the KV-repaired days; a range across two winters
counts a member of a summer day once; the members CSV exports more than 1,000 members. Each
test failed on the code before."""

from __future__ import annotations

import csv
import io
import time
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from django.db import OperationalError, connection
from django.test import Client

from stats.models import DailyUserStat
from telegram_bot.client import TEXT_LIMIT
from telegram_bot.models import ChatPreference
from telegram_bot.state import KVStore
from tests.builders import make_message_update

GROUP = -100777


def say(
    post_update: Any,
    user_id: int,
    text: str,
    ts: int,
    *,
    first: str = "Test",
    last: str | None = None,
    chat_id: int = GROUP,
) -> None:
    update = make_message_update(
        text, chat_id=chat_id, user_id=user_id, chat_type="supergroup", date=ts
    )
    sender = update["message"]["from"]
    sender["first_name"] = first
    if last is not None:
        sender["last_name"] = last
    assert post_update(update).status_code == 200


def test_stats_command_fits_one_telegram_message_with_the_top_setting_at_its_maximum(
    bot: Any, post_update: Any, settings: Any
) -> None:
    """STATS_COMMAND_TOP accepts up to 50 (config/settings.py); Telegram refuses a text over
    4,096 characters ("message is too long"), so /stats must clip or shorten its answer."""
    settings.STATS_COMMAND_TOP = 50
    now = int(time.time())
    for user_id in range(1, 51):
        say(post_update, user_id, "hi", now, first="F" * 64, last="L" * 64)
    say(post_update, 999, "/stats", now)
    texts = [call.params["text"] for call in bot.calls_to("sendMessage")]
    assert len(texts) == 1
    assert len(texts[0]) <= TEXT_LIMIT, f"/stats answer is {len(texts[0])} characters"


# --- members ranked by "last seen" in a chat whose days are split ----------------------------


ZONED = -100778


def _row(chat_id: int, day: date, user_id: int, hour: int, messages: int = 1) -> None:
    DailyUserStat.objects.create(
        chat_id=chat_id,
        day=day,
        user_id=user_id,
        message_count=messages,
        word_count=messages,
        **{f"hour_{hour:02d}": messages},
    )


@pytest.mark.django_db
def test_last_seen_ranking_ignores_a_members_messages_after_the_range(
    admin_client: Client,
) -> None:
    """At UTC+3 the stored day E's hours 21-23 UTC are the next local day. A range ending on
    local day E takes the head of stored day E only; member 1's only message of E is at 22:30
    UTC (local E+1, outside the range), yet that row's day ranks them "last seen" on E, ahead of
    member 2, whose last message in the range is a day later than member 1's."""
    ChatPreference.objects.create(chat_id=ZONED, time_zone="Europe/Moscow")
    end = datetime.now(UTC).date() - timedelta(days=10)
    start = end - timedelta(days=5)
    _row(ZONED, end - timedelta(days=3), 1, 10)  # local end-3: in the range
    _row(ZONED, end, 1, 22)  # 01:30 local of end+1: after the range
    _row(ZONED, end - timedelta(days=1), 2, 10)  # local end-1: in the range
    response = admin_client.get(
        "/api/v1/stats/members",
        {"chat_id": ZONED, "start": start, "end": end, "order": "last_seen"},
    )
    assert response.status_code == 200, response.content
    served = [(m["user_id"], m["messages"], m["last_day"]) for m in response.json()]
    assert served == [
        (2, 1, (end - timedelta(days=1)).isoformat()),
        (1, 1, (end - timedelta(days=3)).isoformat()),
    ]


# --- a member read from the KV counters (failed live write) has no last day ------------------


def _fail_daily_user_inserts(execute: Any, sql: str, params: Any, many: bool, ctx: Any) -> Any:
    if "INSERT INTO stats_daily_user" in sql:
        raise OperationalError("server closed the connection unexpectedly")
    return execute(sql, params, many, ctx)


def test_a_member_repaired_from_the_kv_counters_ranks_by_the_day_they_wrote(
    wired: KVStore, post_update: Any, admin_client: Client
) -> None:
    """Member 3 writes today but the live writer's database add fails: the report repairs the
    day from the KV counters (documented), and member 3 is listed with their message. Ranked by
    "last seen", they wrote last, yet they come last with ``last_day`` null."""
    today = datetime.now(UTC).date()
    yesterday = today - timedelta(days=1)
    noon = int(datetime(yesterday.year, yesterday.month, yesterday.day, 12, tzinfo=UTC).timestamp())
    say(post_update, 1, "one", noon)
    say(post_update, 2, "two", noon)
    with connection.execute_wrapper(_fail_daily_user_inserts):
        say(post_update, 3, "three", int(time.time()) - 1)
    response = admin_client.get(
        "/api/v1/stats/members",
        {"chat_id": GROUP, "start": yesterday, "end": today, "order": "last_seen"},
    )
    assert response.status_code == 200, response.content
    served = [(m["user_id"], m["messages"], m["last_day"]) for m in response.json()]
    assert served[0] == (3, 1, today.isoformat()), served


# --- straddlers over a range with two runs of one cut (winter, summer, winter) ---------------

BERLIN = -100779


@pytest.mark.django_db
def test_a_member_in_both_parts_of_a_summer_day_counts_once_in_a_range_across_two_winters(
    admin_client: Client,
) -> None:
    """Europe/Berlin: a stored day's last hour is the next local day in winter (cut 23), its
    last two in summer (cut 22). Member 1 writes at 22:30 UTC on 10 July (00:30 local, 11 July)
    and at 10:30 UTC on 11 July: one member on local 11 July. Read alone, the summer is right;
    in a range from December to November the straddlers' per-day CASE gives the winter cut a
    BETWEEN that spans the summer (two runs of one cut become one range), and the member is
    counted twice."""
    ChatPreference.objects.create(chat_id=BERLIN, time_zone="Europe/Berlin")
    today = datetime.now(UTC).date()
    year = today.year if today >= date(today.year, 12, 1) else today.year - 1
    july10, july11 = date(year, 7, 10), date(year, 7, 11)
    _row(BERLIN, july10, 1, 22)
    _row(BERLIN, july11, 1, 10)

    def members_on_july11(start: date, end: date) -> int:
        response = admin_client.get(
            "/api/v1/stats/daily", {"chat_id": BERLIN, "start": start, "end": end}
        )
        assert response.status_code == 200, response.content
        (day,) = [d for d in response.json() if d["day"] == july11.isoformat()]
        assert day["messages"] == 2
        return int(day["members"])

    assert members_on_july11(date(year, 7, 1), date(year, 7, 31)) == 1  # summer alone: right
    assert members_on_july11(date(year - 1, 12, 10), date(year, 11, 30)) == 1


# --- the members CSV of a chat with more than 1,000 members ----------------------------------


BIG = -100780


@pytest.mark.django_db
def test_the_members_csv_exports_a_chat_with_more_than_a_thousand_members(
    admin_client: Client,
) -> None:
    """The CSV export is the whole members table; ``member_names`` asks the KV store for every
    member's last message in one ``get_many``, which takes at most 1,000 keys: a chat with
    1,001 members in the range cannot be exported (500)."""
    day = datetime.now(UTC).date() - timedelta(days=2)
    DailyUserStat.objects.bulk_create(
        DailyUserStat(chat_id=BIG, day=day, user_id=user_id, message_count=1, hour_12=1)
        for user_id in range(1, 1002)
    )
    response = admin_client.get(
        "/admin/stats/export.csv", {"chat_id": BIG, "start": day, "end": day}
    )
    assert response.status_code == 200, response.status_code
    rows = list(csv.reader(io.StringIO(response.content.decode("utf-8-sig"))))
    assert len(rows) == 1 + 1001
