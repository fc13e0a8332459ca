"""The Mini App speaks the user's Telegram language (en, ru) and shows the chat's zone."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from telegram_bot.models import ChatPreference
from tests.fakes.telegram import FakeTelegramServer
from tests.webapp.helpers import CREATOR, GROUP, describe_groups, login

pytestmark = pytest.mark.django_db


@pytest.fixture
def token(bot: FakeTelegramServer, settings: Any) -> str:
    describe_groups(bot)
    return str(settings.TELEGRAM_BOT_TOKEN)


def as_user(token: str, user_id: int, **extra: Any) -> Client:
    client = Client()
    assert login(client, token, user_id, **extra).status_code == 200
    return client


def test_the_pages_follow_the_users_telegram_language(token: str) -> None:
    client = Client()
    login(client, token, CREATOR, language_code="ru")
    page = client.get(f"/app/c/{GROUP}/").content.decode()
    assert "сообщений сегодня" in page
    english = as_user(token, CREATOR).get(f"/app/c/{GROUP}/").content.decode()
    assert "messages today" in english


def test_times_are_in_the_chats_zone_named(token: str) -> None:
    ChatPreference.objects.create(chat_id=GROUP, time_zone="Europe/Moscow")
    page = as_user(token, CREATOR).get(f"/app/c/{GROUP}/audit/").content.decode()
    assert "Times in Europe/Moscow." in page
