"""Growth statistics checked against a seeded ground truth: joins and leaves sent through the
webhook as chat_member updates, many also as service messages, many delivered again (some
late, after the member's next move); the member count once a day; a week's retention; the
API that exposes them."""

from __future__ import annotations

import logging
import random
import time
from collections import Counter
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from django.apps import apps
from django.test import Client

from community.growth import member_counts_fetch
from community.models import BotChat, MemberCount
from telegram_bot import insights
from telegram_bot.state import KVStore
from tests.builders import make_message_update
from tests.community.members_helpers import (
    GROUP,
    join_update,
    leave_update,
    processed,
    service_update,
)
from tests.fakes.telegram import FakeTelegramServer

SEED = 1313
USERS = range(5000, 5040)


def seeded_moves(days_back: int, steps: int) -> list[tuple[int, int, str]]:
    """``[(date, user, "join" | "leave")]`` in time order: each user alternates, starting out."""
    rng = random.Random(SEED)
    inside: set[int] = set()
    start = int(time.time()) - days_back * 86400
    moves = []
    at = start
    for _ in range(steps):
        at += rng.randint(60, days_back * 86400 // steps)
        who = rng.choice(USERS)
        kind = "leave" if who in inside else "join"
        (inside.discard if kind == "leave" else inside.add)(who)
        moves.append((at, who, kind))
    return moves


def deliveries(moves: list[tuple[int, int, str]]) -> list[dict[str, Any]]:
    """Every move as chat_member; a third also as the service message; a quarter again at
    once (a lost answer) and a fifth again at the very end (late, after later moves)."""
    rng = random.Random(SEED + 1)
    sent: list[dict[str, Any]] = []
    late: list[dict[str, Any]] = []
    for at, who, kind in moves:
        update = (join_update if kind == "join" else leave_update)(who, date=at)
        sent.append(update)
        if rng.random() < 0.33:
            if kind == "join":
                sent.append(service_update(joined=[who], date=at))
            else:
                sent.append(service_update(left=who, date=at))
        if rng.random() < 0.25:
            sent.append(dict(update, update_id=update["update_id"] + 1_000_000))
        if rng.random() < 0.2:
            late.append(dict(update, update_id=update["update_id"] + 2_000_000))
    return sent + late


def day_of(at: int) -> date:
    return datetime.fromtimestamp(at, tz=UTC).date()


def test_joins_and_leaves_per_day_match_the_ground_truth(
    bot: FakeTelegramServer, post_update: Any, admin_client: Client
) -> None:
    moves = seeded_moves(days_back=12, steps=150)
    for update in deliveries(moves):
        assert processed(post_update, update) == "processed"
    truth = Counter((day_of(at), kind) for at, _, kind in moves)
    start, end = day_of(moves[0][0]), date.today()
    body = admin_client.get(
        "/api/v1/community/growth", {"chat_id": GROUP, "start": start, "end": end}
    ).json()
    assert body["chat_id"] == GROUP
    got = {
        (date.fromisoformat(d["day"]), kind): d[kind + "s"]
        for d in body["days"]
        for kind in ("join", "leave")
        if d[kind + "s"]
    }
    assert got == dict(truth)
    assert len(body["days"]) == (end - start).days + 1
    assert sum(truth.values()) == 150


def test_the_member_count_is_fetched_once_a_day_per_chat(
    bot: FakeTelegramServer, admin_client: Client
) -> None:
    BotChat.objects.create(chat_id=GROUP, chat_type="supergroup", status="member", is_member=True)
    BotChat.objects.create(chat_id=-100999, chat_type="supergroup", status="left")
    bot.results.member_counts[GROUP] = 41
    assert member_counts_fetch() == 1
    bot.results.member_counts[GROUP] = 42
    assert member_counts_fetch() == 1  # the same day: updated, not added
    [row] = MemberCount.objects.all()
    assert (row.chat_id, row.count) == (GROUP, 42)
    assert [c.params for c in bot.calls_to("getChatMemberCount")] == [{"chat_id": GROUP}] * 2
    today = date.today()
    body = admin_client.get(
        "/api/v1/community/growth", {"chat_id": GROUP, "start": today, "end": today}
    ).json()
    assert body["days"] == [{"day": str(today), "joins": 0, "leaves": 0, "member_count": 42}]


def test_without_a_token_the_daily_count_is_one_log_line(
    settings: Any, caplog: pytest.LogCaptureFixture, db: None
) -> None:
    """The worker logged a 14-line traceback for member_counts_tick when no token was set."""
    from community.tasks import member_counts_tick

    settings.TELEGRAM_BOT_TOKEN = ""
    BotChat.objects.create(chat_id=GROUP, chat_type="supergroup", status="member", is_member=True)
    with caplog.at_level(logging.INFO, logger="community.growth"):
        assert member_counts_tick() == 0
    assert [record.getMessage() for record in caplog.records] == [
        "member counts not fetched: TELEGRAM_BOT_TOKEN is not set"
    ]
    assert not any(record.exc_info for record in caplog.records)
    assert not MemberCount.objects.exists()


def test_a_weeks_retention(
    bot: FakeTelegramServer, post_update: Any, admin_client: Client, memory_store: KVStore
) -> None:
    week = date.today() - timedelta(days=60)
    base = int(datetime.combine(week, datetime.min.time(), UTC).timestamp())
    day = 86400
    stays = {  # user: (join offset, leave offset after the join or None)
        5001: (0, None),
        5002: (day, 3 * day),  # left within 7 days
        5003: (2 * day, 10 * day),  # stayed 7 days, not 30
        5004: (6 * day, 40 * day),  # stayed 30 days
        5005: (8 * day, None),  # joined the week after: not in the cohort
    }
    for user, (joined, left) in stays.items():
        processed(post_update, join_update(user, date=base + joined))
        if user == 5003:
            memory_store.delete(f"members:m:{GROUP}:{user}")  # a long stay outlives its record
        if left is not None:
            processed(post_update, leave_update(user, date=base + joined + left))
        processed(post_update, service_update(joined=[user], date=base + joined))  # a twin
    writes = {  # user: days after the week's first day on which they write in the group
        5001: [0, 8],  # after 7 days (the 8th), not after 30
        5002: [1, 4],  # only within their first week
        5003: [8, 9],  # the 9th is their join day + 7: after 7 days
        5004: [11, 35, 36],  # the 36th is their join day + 30
        5005: [20, 50],  # not in the cohort
        5006: [20, 50],  # an older member: not in the cohort
    }
    for user, days in writes.items():
        for offset in days:
            update = make_message_update(
                "hi", chat_id=GROUP, user_id=user, date=base + offset * day + 3600
            )
            assert processed(post_update, update) == "processed"
            assert processed(post_update, update) == "duplicate"  # a re-delivery
    # 5002 writes elsewhere after 30 days: another chat's messages do not count.
    other = make_message_update("hi", chat_id=-100778, user_id=5002, date=base + 40 * day)
    assert processed(post_update, other) == "processed"
    body = admin_client.get(
        "/api/v1/community/retention", {"chat_id": GROUP, "week_start": week}
    ).json()
    assert body == {
        "chat_id": GROUP,
        "week_start": str(week),
        "joined": 4,
        "still_members_after_7_days": 3,
        "still_members_after_30_days": 2,
        "wrote_after_7_days": 3,  # 5001, 5003, 5004
        "wrote_after_30_days": 1,  # 5004
        "activity_available": True,
    }
    recent = admin_client.get(
        "/api/v1/community/retention",
        {"chat_id": GROUP, "week_start": date.today() - timedelta(days=15)},
    ).json()
    # 7 days after the last possible join of that week have passed, 30 days have not.
    assert recent["still_members_after_7_days"] == 0
    assert recent["still_members_after_30_days"] is None
    assert (recent["wrote_after_7_days"], recent["wrote_after_30_days"]) == (0, None)
    too_recent = admin_client.get(
        "/api/v1/community/retention",
        {"chat_id": GROUP, "week_start": date.today() - timedelta(days=10)},
    ).json()
    assert too_recent["still_members_after_7_days"] is None
    assert too_recent["wrote_after_7_days"] is None


@pytest.fixture
def without_statistics(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if the stats app were not installed: nobody offers who wrote when."""
    assert insights.active_users() is not None  # the stats app offers it when it is installed
    monkeypatch.setattr(apps.get_app_config("stats"), "insight_active_users", None)


def test_retention_without_the_statistics_app_says_activity_is_unavailable(
    bot: FakeTelegramServer, post_update: Any, admin_client: Client, without_statistics: None
) -> None:
    week = date.today() - timedelta(days=60)
    base = int(datetime.combine(week, datetime.min.time(), UTC).timestamp())
    processed(post_update, join_update(5001, date=base))
    body = admin_client.get(
        "/api/v1/community/retention", {"chat_id": GROUP, "week_start": week}
    ).json()
    assert body["joined"] == 1 and body["still_members_after_30_days"] == 1
    assert body["activity_available"] is False
    assert (body["wrote_after_7_days"], body["wrote_after_30_days"]) == (None, None)


@pytest.mark.parametrize(
    ("path", "params", "says"),
    [
        ("growth", {"chat_id": GROUP, "start": "2026-01-05", "end": "2026-01-01"}, "before"),
        ("growth", {"chat_id": GROUP, "start": "1999-01-01", "end": "2000-01-01"}, "2000"),
        ("growth", {"chat_id": GROUP, "start": "2001-01-01", "end": "2003-01-01"}, "366"),
        ("retention", {"chat_id": GROUP, "week_start": "2999-01-01"}, "today"),
    ],
)
def test_bad_ranges_are_refused(
    admin_client: Client, path: str, params: dict[str, Any], says: str
) -> None:
    response = admin_client.get(f"/api/v1/community/{path}", params)
    assert response.status_code == 422 and says in response.json()["detail"]


def test_a_positive_chat_id_is_refused(admin_client: Client) -> None:
    response = admin_client.get(
        "/api/v1/community/growth", {"chat_id": 5, "start": "2026-01-01", "end": "2026-01-02"}
    )
    assert response.status_code == 422
