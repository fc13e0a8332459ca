"""The dashboard's figures beyond the daily series: growth through the insights registry (in
the chat's zone, "not available" without a provider), the previous period, paging and
ranking of members, the daily CSV, and what a report costs in queries."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.apps import apps
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from community.models import MemberCount, MemberMovement
from stats.aggregates import month_of
from stats.member_months import month_write
from stats.models import DailyUserStat, MemberMonth
from telegram_bot.models import ChatPreference

CHAT = -100555
TODAY = datetime.now(UTC).date()


def rows(day_offset: int, users: dict[int, tuple[int, int, int]]) -> None:
    """(messages, words, voice seconds) per user on today - ``day_offset``; messages at 12 UTC."""
    for user_id, (messages, words, voice) in users.items():
        DailyUserStat.objects.create(
            chat_id=CHAT,
            day=TODAY - timedelta(days=day_offset),
            user_id=user_id,
            message_count=messages,
            word_count=words,
            voice_seconds=voice,
            hour_12=messages,
        )


def report(client: Client, **params: Any) -> dict[str, Any]:
    query = {"chat_id": CHAT, "start": TODAY - timedelta(days=1), "end": TODAY, **params}
    response = client.get("/api/v1/stats/report", query)
    assert response.status_code == 200, response.content
    return response.json()


@pytest.mark.django_db
def test_the_previous_period_and_growth_in_the_chats_zone(admin_client: Client) -> None:
    ChatPreference.objects.create(chat_id=CHAT, time_zone="Europe/Moscow")
    rows(0, {1: (3, 6, 0)})
    rows(2, {1: (5, 5, 0), 2: (1, 1, 0)})  # the previous two days
    rows(3, {3: (2, 2, 0)})
    # 22:30 UTC the day before yesterday is yesterday in Moscow: this period's join.
    two_days_ago = TODAY - timedelta(days=2)
    late = datetime(two_days_ago.year, two_days_ago.month, two_days_ago.day, 22, 30, tzinfo=UTC)
    for n, (kind, at) in enumerate([("join", late), ("leave", late - timedelta(hours=2))]):
        MemberMovement.objects.create(
            chat_id=CHAT, user_id=n, stay=f"s{n}", kind=kind, at=at, day=at.date()
        )
    MemberCount.objects.create(chat_id=CHAT, day=TODAY, count=40)

    body = report(admin_client)

    assert body["totals"]["messages"] == 3 and body["totals"]["active_members"] == 1
    previous = body["previous"]
    assert (previous["messages"], previous["active_members"]) == (8, 3)
    assert (body["totals"]["joins"], body["totals"]["leaves"]) == (1, 0)
    assert (previous["joins"], previous["leaves"]) == (0, 1)
    assert body["growth"]["available"] is True
    assert [d["members"] for d in body["growth"]["days"]] == [None, 40]
    growth = admin_client.get(
        "/api/v1/stats/growth", {"chat_id": CHAT, "start": TODAY - timedelta(days=1), "end": TODAY}
    ).json()
    assert [d["joins"] for d in growth["days"]] == [1, 0]


@pytest.mark.django_db
def test_without_a_growth_provider_growth_is_not_available(
    admin_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(apps.get_app_config("community"), "insight_growth", None)
    rows(0, {1: (1, 1, 0)})
    body = report(admin_client)
    assert body["growth"] == {"available": False, "permitted": True, "days": []}
    assert body["totals"]["joins"] is None
    page = admin_client.get("/admin/stats/", {"chat_id": CHAT}).content.decode()
    assert "not available" in page  # the text the page shows instead of the chart


@pytest.mark.django_db
def test_members_are_paged_and_ranked_in_the_database(admin_client: Client) -> None:
    rows(0, {u: (u, 100 - u, 60 * (u % 3)) for u in range(1, 31)})
    rows(1, {5: (100, 1, 0)})
    first = report(admin_client, limit=10)
    assert first["members_total"] == 30
    assert [m["user_id"] for m in first["members"][:3]] == [5, 30, 29]
    query = {"chat_id": CHAT, "start": TODAY - timedelta(days=1), "end": TODAY, "limit": 10}
    page = admin_client.get("/api/v1/stats/members", {**query, "offset": 25}).json()
    assert [m["user_id"] for m in page] == [6, 4, 3, 2, 1]  # 5 first, then 30 down to 1
    by_words = admin_client.get("/api/v1/stats/members", {**query, "order": "words"}).json()
    assert by_words[0]["user_id"] == 1 and by_words[0]["words"] == 99
    by_voice = admin_client.get("/api/v1/stats/members", {**query, "order": "voice"}).json()
    assert by_voice[0]["voice_minutes"] == 2.0
    bad = admin_client.get("/api/v1/stats/members", {**query, "order": "name"})
    assert bad.status_code == 422


@pytest.mark.django_db
def test_a_report_costs_the_same_queries_for_a_day_or_a_year(admin_client: Client) -> None:
    for offset in range(0, 300, 7):
        rows(offset, {u: (1, 1, 0) for u in range(1, 6)})
    months = {month_of(TODAY - timedelta(days=offset)) for offset in range(0, 300, 7)}
    for month in months:  # the member sums of the closed months (stats.member_months)
        month_write(CHAT, month)

    def queries_of(days: int) -> int:
        query = {"chat_id": CHAT, "start": TODAY - timedelta(days=days - 1), "end": TODAY}
        with CaptureQueriesContext(connection) as queries:
            assert admin_client.get("/api/v1/stats/report", query).status_code == 200
        return len(queries)

    counts = [queries_of(1), queries_of(365)]
    # Session, user, zone, coverage, day sums, KV indexes and totals, members, growth (2),
    # previous period (and its growth), profiles, last messages: none per day or member.
    assert counts[0] == counts[1] <= 16
    # Closed months with rows and no sums: the ranking and the previous period read again.
    MemberMonth.objects.all().delete()
    assert queries_of(365) == counts[0] + 1


@pytest.mark.django_db
def test_an_empty_range_and_the_daily_csv(admin_client: Client) -> None:
    DailyUserStat.objects.create(chat_id=CHAT, day=TODAY, user_id=1, message_count=0)
    body = report(admin_client)
    assert body["totals"]["messages"] == 0 and body["members"] == []
    query = {"chat_id": CHAT, "start": TODAY - timedelta(days=1), "end": TODAY}
    response = admin_client.get("/admin/stats/daily.csv", query)
    assert response.status_code == 200 and response.content.startswith(b"\xef\xbb\xbf")
    table = list(csv.reader(io.StringIO(response.content.decode("utf-8-sig"))))
    assert table[0][:4] == ["day", "messages", "words", "active_members"]
    assert [row[:2] for row in table[1:]] == [
        [(TODAY - timedelta(days=1)).isoformat(), "0"],
        [TODAY.isoformat(), "0"],
    ]
    assert admin_client.get("/admin/stats/daily.csv", {"chat_id": CHAT}).status_code == 200
    assert admin_client.get("/admin/stats/daily.csv", {"start": "x"}).status_code == 400
