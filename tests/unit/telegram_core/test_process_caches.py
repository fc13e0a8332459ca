"""The core's per-process TTL caches (cachetools): a change another process made is seen once
the entry's time is up, not before; this process's own change at once; and they are bounded."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from telegram_bot import admins, bot, languages
from telegram_bot.models import BotAdmin, ChatPreference
from tests.fakes.telegram import FakeTelegramServer

pytestmark = pytest.mark.django_db


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[float]]:
    now = [time.monotonic()]
    monkeypatch.setattr("time.monotonic", lambda: now[0])
    yield now
    bot._username.clear()
    bot._username_unknown.clear()


def test_a_chat_language_changed_elsewhere_is_seen_after_the_cache_time(clock: list[float]) -> None:
    ChatPreference.objects.create(chat_id=-700, language="ru")
    assert languages.chat_language(-700) == "ru"
    ChatPreference.objects.filter(chat_id=-700).update(language="en")  # another process
    clock[0] += languages.CHAT_CACHE_SECONDS - 1
    assert languages.chat_language(-700) == "ru"
    clock[0] += 1
    assert languages.chat_language(-700) == "en"


def test_the_chat_language_cache_is_bounded(clock: list[float]) -> None:
    for chat_id in range(languages.CACHE_LIMIT + 50):
        languages._chat_cache[-chat_id - 1] = ""
    assert len(languages._chat_cache) == languages.CACHE_LIMIT


def test_the_listed_admins_follow_another_processes_rows_after_ten_seconds(
    clock: list[float], settings: object
) -> None:
    assert 77 not in admins.listed_admin_ids()
    BotAdmin.objects.bulk_create([BotAdmin(telegram_id=77)])  # no signal: as another process
    clock[0] += admins.LISTED_ADMINS_SECONDS - 1
    assert 77 not in admins.listed_admin_ids()
    clock[0] += 1
    assert 77 in admins.listed_admin_ids()
    BotAdmin.objects.create(telegram_id=78)  # this process: at once
    assert 78 in admins.listed_admin_ids()


def test_a_failed_get_me_is_asked_again_after_a_minute(
    clock: list[float], fake_telegram: FakeTelegramServer, settings: object
) -> None:
    from tests.conftest import wire_bot

    wire_bot(settings, fake_telegram)
    fake_telegram.fail_next("getMe", times=1, status=502, description="Bad Gateway")
    bot._username.clear()
    assert bot.bot_username() is None
    assert bot.bot_username() is None
    assert len(fake_telegram.calls_to("getMe")) == 1
    clock[0] += bot.USERNAME_RETRY_SECONDS
    assert bot.bot_username()
    assert len(fake_telegram.calls_to("getMe")) == 2
