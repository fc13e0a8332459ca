"""The admin index opens on the overview: each app's cards, with figures checked against the
rows seeded here, for the users allowed to see them, in a bounded number of queries."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from community.models import MemberMovement
from community.records import JoinRequestRecord, JoinRequestStore
from content.models import Post, PostStatus
from stats.models import DailyUserStat
from support.models import Ticket, TicketMessage
from telegram_bot.jobs.models import Job, JobStatus
from telegram_bot.pipeline.process import dead_letters
from telegram_bot.state import KVStore

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
CHAT = -1001234567890


@pytest.fixture(autouse=True)
def frozen(monkeypatch: pytest.MonkeyPatch, memory_store: KVStore) -> None:
    monkeypatch.setattr("django.utils.timezone.now", lambda: NOW)


def admin_client(django_user_model: Any) -> Client:
    client = Client()
    client.force_login(django_user_model.objects.create_superuser("op", "op@example.org", "pw"))
    return client


def cards(response: Any) -> dict[str, Any]:
    assert response.status_code == 200
    return {card.key: card for card in response.context["overview_cards"]}


def stat(day: str, user_id: int, hours: dict[int, int], chat_id: int = CHAT) -> None:
    DailyUserStat.objects.create(
        chat_id=chat_id,
        day=day,
        user_id=user_id,
        message_count=sum(hours.values()),
        **{f"hour_{hour:02d}": count for hour, count in hours.items()},
    )


def seed(store: KVStore) -> None:
    # Messages: 2026-03-10 (UTC) 5 + 3 in two chats; 2026-03-09 6 by 12:00 (the same hours as
    # today so far) and 4 later that day; one writer 8 days ago.
    stat("2026-03-10", 1, {9: 5})
    stat("2026-03-10", 2, {1: 3}, chat_id=-100777)
    stat("2026-03-09", 1, {12: 6, 23: 4})
    stat("2026-03-02", 3, {12: 9})
    for user_id, kind, at in [
        (10, "join", NOW - timedelta(hours=1)),
        (11, "join", NOW - timedelta(hours=2)),
        (12, "leave", NOW - timedelta(hours=3)),
        (13, "join", NOW - timedelta(hours=25)),  # yesterday, by this time
        (14, "join", NOW - timedelta(hours=20)),  # yesterday, later than this time
    ]:
        MemberMovement.objects.create(
            chat_id=CHAT, user_id=user_id, stay=f"s{user_id}", kind=kind, at=at, day=at.date()
        )
    answered = Ticket.objects.create(bot_id=1, number=1, user_id=5, chat_id=5, opened_update_id=1)
    waiting = Ticket.objects.create(bot_id=1, number=2, user_id=6, chat_id=6, opened_update_id=2)
    Ticket.objects.create(
        bot_id=1, number=3, user_id=7, chat_id=7, opened_update_id=3, status="closed"
    )
    for ticket, sender, at in [
        (answered, "user", NOW - timedelta(hours=9)),
        (answered, "admin", NOW - timedelta(hours=8)),
        (waiting, "user", NOW - timedelta(hours=5, minutes=30)),
    ]:
        TicketMessage.objects.create(
            ticket=ticket, sender=sender, kind="text", text="hi", created_at=at
        )
    Job.objects.create(kind="support.deliver", status=JobStatus.FAILED)
    Job.objects.create(kind="support.deliver", status=JobStatus.SUCCEEDED)
    for hours, status in [(2, PostStatus.SCHEDULED), (3, PostStatus.SCHEDULED), (1, "draft")]:
        Post.objects.create(
            channel="@news", text="x", status=status, publish_at=NOW + timedelta(hours=hours)
        )
    Post.objects.create(
        channel="@news", text="x", status="scheduled", publish_at=NOW + timedelta(days=1)
    )
    dead_letters().put({"update_id": 77, "message": {}}, RuntimeError("boom"))
    requests = JoinRequestStore(store)
    for number, status in [(1, "pending"), (2, "pending"), (3, "done")]:
        record = JoinRequestRecord(
            token=f"token{number:07d}",
            chat_id=CHAT,
            chat_title="Group",
            chat_type="supergroup",
            user_id=number,
            user_chat_id=number,
            user_name="U",
            member_name="U",
            summary="",
            requested_at=int(NOW.timestamp()),
            expires_at_ms=int(NOW.timestamp() * 1000) + 10**9,
            status=status,
        )
        store.set(requests.key(record.token), record.to_json(), 10**9)


def test_the_overview_shows_each_figure_and_links_to_its_list(
    django_user_model: Any, memory_store: KVStore, django_assert_max_num_queries: Any
) -> None:
    seed(memory_store)
    client = admin_client(django_user_model)
    with django_assert_max_num_queries(14):
        response = client.get("/admin/")
    found = cards(response)
    assert list(found) == [
        "messages-today",
        "active-members",
        "new-members",
        "departed-members",
        "open-tickets",
        "join-requests",
        "posts-today",
        "dead-letters",
        "failed-jobs",
    ]
    assert (found["messages-today"].value, found["messages-today"].detail) == (
        "8",
        "by this time yesterday 6 (+2)",
    )
    assert found["active-members"].value == "2"  # user 3 wrote 8 days ago
    assert found["new-members"].value == "2"
    assert found["new-members"].detail == "by this time yesterday 1 (+1)"
    assert found["departed-members"].detail == "by this time yesterday 0 (+1)"
    assert found["departed-members"].value == "1"
    assert found["open-tickets"].value == "2"
    assert found["open-tickets"].detail == "oldest waiting: #2, 5h 30m"
    assert found["join-requests"].value == "2"
    assert (found["posts-today"].value, found["posts-today"].detail) == ("2", "next at 14:00")
    assert found["dead-letters"].value == "1" and found["dead-letters"].alert
    assert found["failed-jobs"].value == "1"
    for card in found.values():
        if card.url:
            assert client.get(card.url).status_code == 200, card.key
    # A member card opens the list of exactly its figure (today's joins, not every join ever).
    for key in ("new-members", "departed-members"):
        listed = client.get(found[key].url).context["cl"].result_count
        assert listed == int(found[key].value), key
    html = response.content.decode()
    assert 'id="card-open-tickets" href="/admin/support/ticket/?status__exact=open"' in html


def test_today_is_the_day_in_the_time_zone_setting(
    django_user_model: Any, settings: Any, memory_store: KVStore
) -> None:
    # 12:00 UTC is 15:00 in Moscow (UTC+3): its day began at 21:00 UTC the day before.
    # In New York (UTC-4 in March, daylight time) it is 08:00: the day began at 04:00 UTC.
    # Yesterday counts only its hours up to the one holding this time of day (15:00 in Moscow,
    # 08:00 in New York): 05:00 UTC is 08:00 in Moscow and 01:00 in New York, so it counts in
    # both; 20:00 UTC (23:00 Moscow, 16:00 New York) in neither.
    stat("2026-03-09", 1, {5: 64, 20: 1, 21: 2, 23: 4})
    stat("2026-03-10", 1, {3: 8, 4: 16, 11: 32})
    settings.TIME_ZONE = "Europe/Moscow"
    found = cards(admin_client(django_user_model).get("/admin/"))
    assert found["messages-today"].value == "62"  # 2 + 4 + 8 + 16 + 32
    assert found["messages-today"].detail == "by this time yesterday 64 (-2)"
    settings.TIME_ZONE = "America/New_York"
    client = Client()
    client.force_login(django_user_model.objects.get(username="op"))
    found = cards(client.get("/admin/"))
    assert found["messages-today"].value == "48"  # 16 + 32
    assert found["messages-today"].detail == "by this time yesterday 64 (-16)"


def test_a_user_sees_only_the_cards_of_lists_they_may_open(django_user_model: Any) -> None:
    user = django_user_model.objects.create_user("viewer", password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_ticket"))
    client = Client()
    client.force_login(user)
    assert list(cards(client.get("/admin/"))) == ["open-tickets"]
    nobody = User.objects.create_user("nobody", password="pw", is_staff=True)
    client.force_login(nobody)
    response = client.get("/admin/")
    assert response.context["overview_cards"] == []
    assert 'id="overview"' not in response.content.decode()


def test_a_failing_provider_costs_its_own_cards_only(
    django_user_model: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(user: Any) -> list[Any]:
        raise RuntimeError("database on fire")

    monkeypatch.setattr("support.overview.support_cards", broken)
    found = cards(admin_client(django_user_model).get("/admin/"))
    assert found["support-unavailable"].detail == "unavailable (see the logs)"
    assert "messages-today" in found and "open-tickets" not in found


def test_today_by_chat_splits_the_figures_and_each_link_opens_its_count(
    django_user_model: Any, memory_store: KVStore, django_assert_max_num_queries: Any
) -> None:
    """The messages card opens "Today by chat": messages, joins and leaves of each chat
    today so far against yesterday by the same time; each join and leave figure opens the
    list of exactly what it counts, in its chat."""
    from community.models import BotChat

    seed(memory_store)
    other = -100777
    BotChat.objects.create(chat_id=CHAT, title="Main group", chat_type="supergroup")
    for user_id, kind, at in [
        (20, "join", NOW - timedelta(hours=4)),
        (21, "leave", NOW - timedelta(hours=5)),
        (22, "leave", NOW - timedelta(hours=6)),
        (23, "leave", NOW - timedelta(hours=30)),  # yesterday, by this time
    ]:
        MemberMovement.objects.create(
            chat_id=other, user_id=user_id, stay=f"s{user_id}", kind=kind, at=at, day=at.date()
        )
    client = admin_client(django_user_model)
    overview = cards(client.get("/admin/"))
    assert overview["messages-today"].url == "/admin/stats/today/"
    with django_assert_max_num_queries(12):
        response = client.get(overview["messages-today"].url)
    assert response.status_code == 200
    keys = [figure.key for figure in response.context["figures"]]
    assert keys == ["messages", "joins", "leaves"]
    rows = {row["chat_id"]: row for row in response.context["rows"]}
    assert list(rows) == [CHAT, other]  # the most messages first
    figures = {
        chat_id: {cell["key"]: (cell["today"], cell["detail"]) for cell in row["cells"]}
        for chat_id, row in rows.items()
    }
    assert figures[CHAT] == {
        "messages": (5, "by this time yesterday 6 (-1)"),
        "joins": (2, "by this time yesterday 1 (+1)"),
        "leaves": (1, "by this time yesterday 0 (+1)"),
    }
    assert figures[other] == {
        "messages": (3, "by this time yesterday 0 (+3)"),
        "joins": (1, "by this time yesterday 0 (+1)"),
        "leaves": (2, "by this time yesterday 1 (+1)"),
    }
    # The per-chat figures add up to the overview's cards.
    assert sum(f["messages"][0] for f in figures.values()) == int(overview["messages-today"].value)
    assert sum(f["joins"][0] for f in figures.values()) == 3
    html = response.content.decode()
    assert "Main group" in html and "(-1001234567890)" not in html
    for row in rows.values():
        for cell in row["cells"]:
            assert cell["url"], (row["chat_id"], cell["key"])
            opened = client.get(cell["url"])
            assert opened.status_code == 200, cell["url"]
            if cell["key"] in ("joins", "leaves"):
                listed = opened.context["cl"].result_count
                assert listed == cell["today"], (row["chat_id"], cell["key"])
