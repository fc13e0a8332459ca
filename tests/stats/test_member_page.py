"""The member page (stats.member_page): one person in one chat, names first, each app's part
(warnings, tickets, joins and leaves, the audit log) shown only to a user who may view it, and
linked from the audit log's target."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.utils import timezone

from community.models import MemberMovement
from moderation.models import Warning
from stats.models import ChatUserProfile, DailyUserStat, StatsChat
from support.models import Ticket
from telegram_bot.audit import Actor, audit_record

pytestmark = pytest.mark.django_db
CHAT, USER = -1001234567890, 4242
PAGE = f"/admin/stats/member/{CHAT}/{USER}/"
STATS = "stats.view_dailyuserstat"
SECTIONS = {
    "moderation.view_warning": 'id="member-warnings"',
    "support.view_ticket": 'id="member-tickets"',
    "community.view_membermovement": 'id="member-movements"',
    "telegram_bot.view_auditentry": 'id="member-audit"',
}
ACTIONS = 'id="member-actions"'


def seed() -> None:
    today = datetime.now(UTC).date()
    StatsChat.objects.create(chat_id=CHAT, title="Python club")
    ChatUserProfile.objects.create(
        chat_id=CHAT, user_id=USER, display_name="Алексей Смирнов", username="alexey"
    )
    for back, count in ((0, 5), (1, 7), (40, 11)):
        DailyUserStat.objects.create(
            chat_id=CHAT,
            day=today - timedelta(days=back),
            user_id=USER,
            message_count=count,
            word_count=count * 3,
            voice_count=1,
            voice_seconds=90,
        )
    # Another member's and another chat's figures stay out.
    DailyUserStat.objects.create(chat_id=CHAT, day=today, user_id=USER + 1, message_count=100)
    DailyUserStat.objects.create(chat_id=-100555, day=today, user_id=USER, message_count=100)
    Warning.objects.create(
        chat_id=CHAT,
        user_id=USER,
        reason="spam links",
        expires_at=timezone.now() + timedelta(days=30),
    )
    Ticket.objects.create(
        bot_id=1,
        number=7,
        user_id=USER,
        chat_id=USER,
        subject="cannot export",
        opened_update_id=1,
    )
    now = timezone.now()
    MemberMovement.objects.create(
        chat_id=CHAT, user_id=USER, stay="s1", kind="join", at=now, day=now.date()
    )
    audit_record(
        action="mute",
        actor=Actor(10, "Maria"),
        source="command",
        chat_id=CHAT,
        target_id=USER,
        target_name="Алексей Смирнов",
        reason="flooding the chat",
        detail="for 1h",
    )
    audit_record(
        action="ban", actor=Actor(10, "Maria"), source="command", chat_id=-100555, target_id=USER
    )


def login(permissions: tuple[str, ...]) -> Client:
    account = User.objects.create_user("viewer", is_staff=True)
    account.user_permissions.set(
        [
            Permission.objects.get(content_type__app_label=app, codename=codename)
            for app, codename in (p.split(".", 1) for p in permissions)
        ]
    )
    client = Client()
    client.force_login(account)
    return client


def test_the_page_shows_the_member_by_name_with_every_section(admin_client: Client) -> None:
    seed()
    page = admin_client.get(PAGE + "?days=30").content.decode()
    assert "Алексей Смирнов" in page and "@alexey" in page and "Python club" in page
    assert str(USER) in page  # the ids, as secondary text
    # The last 30 days: 5 + 7 messages (the day 40 days back and the others' rows left out).
    assert 'id="member-messages">12<' in page
    assert 'id="member-words">36<' in page
    assert 'id="member-voice">2<' in page
    assert "spam links" in page  # the warning's reason
    assert "cannot export" in page and "/admin/support/ticket/" in page
    assert "flooding the chat" in page and "Maria muted" in page  # the audit log, as sentences
    assert page.count('class="member-audit-entry"') == 1  # not the other chat's ban
    assert 'class="member-movement member-movement-join"' in page
    for marker in [*SECTIONS.values(), ACTIONS]:
        assert marker in page
    longer = admin_client.get(PAGE + "?days=90").content.decode()
    assert 'id="member-messages">23<' in longer


def test_the_page_needs_the_statistics_permission() -> None:
    seed()
    assert login(("moderation.view_warning",)).get(PAGE).status_code == 403


@pytest.mark.parametrize("permission", list(SECTIONS))
def test_each_section_is_shown_only_to_who_may_view_it(permission: str) -> None:
    seed()
    page = login((STATS, permission)).get(PAGE).content.decode()
    for other, marker in SECTIONS.items():
        assert (marker in page) == (other == permission), other
    assert ACTIONS not in page  # acting needs moderation's change permission


def test_the_actions_are_offered_with_moderations_change_permission() -> None:
    seed()
    page = login((STATS, "moderation.change_warning")).get(PAGE).content.decode()
    assert ACTIONS in page and 'name="csrfmiddlewaretoken"' in page
    assert SECTIONS["moderation.view_warning"] not in page


def test_a_member_without_figures_or_names_has_a_page(admin_client: Client) -> None:
    response = admin_client.get("/admin/stats/member/-100999/77/")
    assert response.status_code == 200
    page = response.content.decode()
    assert re.search(r"<title>\s*Member: user 77 ", page) and 'id="member-first-day"' not in page
    assert admin_client.get("/admin/stats/member/x/77/").status_code == 404


def test_the_audit_logs_target_links_to_the_member_page(admin_client: Client) -> None:
    seed()
    page = admin_client.get("/admin/telegram_bot/auditentry/").content.decode()
    assert f'href="{PAGE}" class="member-link">Алексей Смирнов</a>' in page
    viewer = login(("telegram_bot.view_auditentry",))
    assert PAGE not in viewer.get("/admin/telegram_bot/auditentry/").content.decode()


def test_the_page_speaks_russian(admin_client: Client) -> None:
    seed()
    page = admin_client.get(PAGE, HTTP_ACCEPT_LANGUAGE="ru").content.decode()
    for russian in (
        "Предупреждения и модерация",
        "Обращения",
        "Вступления и выходы",
        "журнале аудита",
        "Предупредить",
        "Замьютить на 1 ч",
        "Дни — в часовом поясе чата",
    ):
        assert russian in page, russian
    for english in ("Warnings and moderation", "Joins and leaves", "In the audit log", "Warn<"):
        assert english not in page, english


def test_days_before_the_chats_first_counted_day_are_not_drawn(admin_client: Client) -> None:
    seed()  # the chat's first counted day is 40 days back
    response = admin_client.get(PAGE + "?days=365")
    chart = response.context["chart"]
    first = (datetime.now(UTC).date() - timedelta(days=40)).isoformat()
    assert chart["labels"][0] <= first and len(chart["labels"]) <= 7  # weeks from that day
    assert 'id="member-first-day"' in response.content.decode()
    assert 'id="member-first-day"' not in admin_client.get(PAGE + "?days=30").content.decode()
