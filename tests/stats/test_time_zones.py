"""Days and hours in the chat's time zone: a chat at UTC+3 and one at UTC-5, against a ground
truth computed here from the seeded messages' timestamps.

Stored days are UTC days; a local day is the right hours of two of them (``stats.aggregates``).
Every member writes messages of one length here, so the words a split stored day shares by
messages are exact too (the documented rule: shared in proportion to the member's messages).
"""

from __future__ import annotations

import csv
import io
import random
import time
from collections import Counter
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.test import Client

from stats.backfill import backfill_run
from stats.selectors import stats_report
from telegram_bot.models import ChatPreference
from telegram_bot.state import get_store
from tests.builders import make_message_update

ZONES = {-100301: "Europe/Moscow", -100302: "America/New_York"}  # UTC+3, UTC-5 (December)
WORDS = {11: 1, 12: 2, 13: 3, 14: 4}  # words per message of each member


def seed(post_update: Any, chat_id: int, zone: ZoneInfo) -> list[tuple[int, int]]:
    """Messages over the last 4 local days, every hour of the day, around both midnights;
    returns (timestamp, user) of each."""
    now = int(time.time())
    today = datetime.now(zone).date()
    first = datetime.combine(today - timedelta(days=4), datetime.min.time(), tzinfo=zone)
    rng = random.Random(chat_id)
    sent = []
    for n in range(160):
        ts = int(first.timestamp()) - 3 * 3600 + rng.randrange(0, 5 * 86400)
        if n % 8 == 0:  # a minute either side of a local or a UTC midnight
            edge = rng.choice([first, first.astimezone(UTC)]) + timedelta(days=rng.randrange(4))
            ts = int(edge.timestamp()) + rng.choice([-60, 60])
        if ts >= now - 5:
            continue
        user_id = rng.choice(list(WORDS))
        text = " ".join(["word"] * WORDS[user_id])
        update = make_message_update(
            text, chat_id=chat_id, user_id=user_id, chat_type="supergroup", date=ts
        )
        assert post_update(update)["X-Update-Outcome"] == "processed"
        sent.append((ts, user_id))
    return sent


def truth(sent: list[tuple[int, int]], zone: ZoneInfo, start: date, end: date) -> dict[str, Any]:
    days: dict[date, Counter[str]] = {}
    actives: dict[date, set[int]] = {}
    hours: dict[date, list[int]] = {}
    week = [[0] * 24 for _ in range(7)]
    members: dict[int, Counter[str]] = {}
    for ts, user_id in sent:
        local = datetime.fromtimestamp(ts, zone)
        if not start <= local.date() <= end:
            continue
        day = local.date()
        days.setdefault(day, Counter()).update(messages=1, words=WORDS[user_id])
        actives.setdefault(day, set()).add(user_id)
        hours.setdefault(day, [0] * 24)[local.hour] += 1
        week[day.weekday()][local.hour] += 1
        members.setdefault(user_id, Counter()).update(messages=1, words=WORDS[user_id])
    return {"days": days, "actives": actives, "hours": hours, "week": week, "members": members}


@pytest.mark.parametrize("chat_id", sorted(ZONES))
@pytest.mark.parametrize("verified", [False, True])
def test_days_hours_and_the_heat_map_are_in_the_chats_zone(
    bot: Any, post_update: Any, admin_client: Client, chat_id: int, verified: bool
) -> None:
    zone = ZoneInfo(ZONES[chat_id])
    ChatPreference.objects.create(chat_id=chat_id, time_zone=ZONES[chat_id])
    sent = seed(post_update, chat_id, zone)
    if verified:  # closed days read from the database as verified, today live
        assert backfill_run(owner="t", force=True).outcome == "done"
    today = datetime.now(zone).date()
    start, end = today - timedelta(days=3), today
    expected = truth(sent, zone, start, end)
    query = {"chat_id": chat_id, "start": start, "end": end, "limit": 100}

    body = admin_client.get("/api/v1/stats/report", query).json()

    assert body["time_zone"] == ZONES[chat_id] and body["today"] == today.isoformat()
    shown = {date.fromisoformat(d["day"]): d for d in body["days"]}
    assert list(shown) == [start + timedelta(days=n) for n in range(4)]
    for day, view in shown.items():
        counts = expected["days"].get(day, Counter())
        assert (view["messages"], view["words"]) == (counts["messages"], counts["words"]), day
        assert view["members"] == len(expected["actives"].get(day, ())), day
    hour_rows = {date.fromisoformat(r["day"]): r["hours"] for r in body["hours"]["days"]}
    assert hour_rows == {day: expected["hours"].get(day, [0] * 24) for day in shown}
    assert body["hours"]["week"] == expected["week"]
    members = {m["user_id"]: (m["messages"], m["words"]) for m in body["members"]}
    assert members == {u: (c["messages"], c["words"]) for u, c in expected["members"].items()}
    assert body["members_total"] == len(expected["members"])
    assert body["totals"]["messages"] == sum(c["messages"] for c in expected["days"].values())
    # A local day is as trusted as the least trusted of its stored days: at UTC-5 yesterday
    # evening is today's UTC hours, still live.
    assert body["days"][0]["source"] == ("database" if verified else "live")
    assert body["days"][-1]["source"] == "live"

    export = admin_client.get("/admin/stats/daily.csv", query)
    rows = list(csv.DictReader(io.StringIO(export.content.decode("utf-8-sig"))))
    assert [(r["day"], int(r["messages"]), r["time_zone"]) for r in rows] == [
        (day.isoformat(), expected["days"].get(day, Counter())["messages"], ZONES[chat_id])
        for day in shown
    ]


def test_a_range_edge_takes_only_its_hours_of_a_stored_day(
    bot: Any, post_update: Any, admin_client: Client
) -> None:
    """At UTC+3, 22:30 UTC is the next local day: a one-day range gets the right member."""
    chat_id, zone = -100303, ZoneInfo("Europe/Moscow")
    ChatPreference.objects.create(chat_id=chat_id, time_zone="Europe/Moscow")
    day = datetime.now(zone).date() - timedelta(days=2)
    utc_day = day - timedelta(days=1)
    for user_id, hour in ((21, 20), (22, 22)):  # UTC hours of the day before the local day
        ts = int(
            datetime(utc_day.year, utc_day.month, utc_day.day, hour, 30, tzinfo=UTC).timestamp()
        )
        update = make_message_update(
            "a b", chat_id=chat_id, user_id=user_id, chat_type="supergroup", date=ts
        )
        assert post_update(update)["X-Update-Outcome"] == "processed"
    query = {"chat_id": chat_id, "start": day, "end": day}
    body = admin_client.get("/api/v1/stats/report", query).json()
    assert [(m["user_id"], m["messages"], m["words"]) for m in body["members"]] == [(22, 1, 2)]
    assert [(d["messages"], d["members"]) for d in body["days"]] == [(1, 1)]
    before = {**query, "start": day - timedelta(days=1), "end": day - timedelta(days=1)}
    body = admin_client.get("/api/v1/stats/report", before).json()
    assert [(m["user_id"], m["messages"]) for m in body["members"]] == [(21, 1)]
    assert body["hours"]["days"][0]["hours"][23] == 1  # 20:30 UTC is 23:30 in Moscow


def test_today_is_not_verified_while_its_open_utc_hours_have_no_messages(
    bot: Any, post_update: Any
) -> None:
    """Moscow's today is 21:00-24:00 of yesterday (UTC, closed, verified) and 00:00-21:00 of
    today (UTC, open). With no message yet in today's UTC hours the open part is "no data";
    the local day is still under way, so it is live, never "database (verified complete)".
    (Seen when CI ran a few minutes after UTC midnight.)"""
    chat_id, zone = -100304, ZoneInfo("Europe/Moscow")
    ChatPreference.objects.create(chat_id=chat_id, time_zone="Europe/Moscow")
    utc_day = datetime.now(UTC).date()
    yesterday = utc_day - timedelta(days=1)
    ts = int(datetime(yesterday.year, yesterday.month, yesterday.day, 22, tzinfo=UTC).timestamp())
    update = make_message_update(
        "a b", chat_id=chat_id, user_id=31, chat_type="supergroup", date=ts
    )
    assert post_update(update)["X-Update-Outcome"] == "processed"
    assert backfill_run(owner="t", force=True).outcome == "done"

    report = stats_report(
        chat_id=chat_id, start=utc_day, end=utc_day, store=get_store(), today=utc_day, zone=zone
    )

    [view] = report.days
    assert (view.day, view.messages, view.words) == (utc_day, 1, 2)
    assert view.source == "live"
    yesterday_view = stats_report(
        chat_id=chat_id, start=yesterday, end=yesterday, store=get_store(), today=utc_day, zone=zone
    ).days[0]
    assert yesterday_view.source == "database"  # closed, its stored days verified
