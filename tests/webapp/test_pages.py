"""The overview shows the chat's own statistics (today, the week, top members by name, the
heat map) and nothing of another chat; the audit log shows only the chat's entries."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from telegram_bot.audit import Actor, audit_record
from tests.builders import make_message_update, user
from tests.fakes.telegram import FakeTelegramServer
from tests.webapp.helpers import CREATOR, GROUP, MEMBER, OTHER_GROUP, describe_groups, login

pytestmark = pytest.mark.django_db


@pytest.fixture
def token(bot: FakeTelegramServer, settings: Any) -> str:
    describe_groups(bot)
    return str(settings.TELEGRAM_BOT_TOKEN)


def _say(post_update: Any, chat_id: int, user_id: int, name: str, times: int) -> None:
    for n in range(times):
        update = make_message_update(f"hello number {n}", chat_id=chat_id, user_id=user_id)
        update["message"]["from"] = user(user_id, name)
        assert post_update(update).status_code == 200


def test_the_overview_counts_this_chat_only(token: str, post_update: Any) -> None:
    _say(post_update, GROUP, MEMBER, "Mallory", 3)
    _say(post_update, OTHER_GROUP, 6006, "Zed", 5)
    client = Client()
    login(client, token, CREATOR)
    page = client.get(f"/app/c/{GROUP}/").content.decode()
    today = page.split('id="today-messages">')[1].split("<")[0]
    assert today == "3"
    assert "Mallory" in page and "Zed" not in page
    assert page.count('class="s4"') == 1  # the one busiest hour of the heat map


def test_the_audit_log_shows_this_chat_only(token: str) -> None:
    audit_record(
        action="ban",
        actor=Actor(CREATOR, "Olga"),
        source="command",
        chat_id=GROUP,
        target_id=MEMBER,
        target_name="Mallory",
    )
    audit_record(
        action="ban",
        actor=Actor(21, "Oscar"),
        source="command",
        chat_id=OTHER_GROUP,
        target_id=6006,
        target_name="Zed",
    )
    client = Client()
    login(client, token, CREATOR)
    page = client.get(f"/app/c/{GROUP}/audit/").content.decode()
    assert "Mallory" in page and "Zed" not in page and "Oscar" not in page


def test_the_audit_log_links_targets_to_their_member_page(token: str) -> None:
    audit_record(
        action="ban",
        actor=Actor(CREATOR, "Olga"),
        source="command",
        chat_id=GROUP,
        target_id=MEMBER,
        target_name="Mallory",
    )
    client = Client()
    login(client, token, CREATOR)
    page = client.get(f"/app/c/{GROUP}/audit/").content.decode()
    assert f'href="/app/c/{GROUP}/members/{MEMBER}/"' in page


def test_the_overview_shows_the_latest_member_count(token: str) -> None:
    from django.utils import timezone

    from community.models import MemberCount

    MemberCount.objects.create(chat_id=GROUP, day=timezone.now().date(), count=321)
    MemberCount.objects.create(chat_id=OTHER_GROUP, day=timezone.now().date(), count=999)
    client = Client()
    login(client, token, CREATOR)
    page = client.get(f"/app/c/{GROUP}/").content.decode()
    assert 'id="member-count">321<' in page and "999" not in page
