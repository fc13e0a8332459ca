"""Notifications to several admins are isolated from each other."""

from __future__ import annotations

from typing import Any

from telegram_bot.models import BlockedChat, BotAdmin, DeliveryFailure
from telegram_bot.notifications import notify_admins
from tests.builders import make_message_update
from tests.conftest import OWNER_ID
from tests.fakes.telegram import FakeTelegramServer


def test_one_admin_who_blocked_the_bot_does_not_stop_the_others(bot: FakeTelegramServer) -> None:
    for admin_id in (11, 12, 13):
        BotAdmin.objects.create(telegram_id=admin_id)
    bot.block_chat(12)
    report = notify_admins("New ticket #1", purpose="test")
    assert sorted(report.sent) == sorted([OWNER_ID, 11, 13])
    assert list(report.failed) == [12]
    assert "blocked" in report.failed[12]
    failure = DeliveryFailure.objects.get()
    assert (failure.chat_id, failure.purpose) == (12, "test")
    assert BlockedChat.objects.filter(chat_id=12).exists()
    delivered = sorted(c.params["chat_id"] for c in bot.calls_to("sendMessage") if not c.failed)
    assert delivered == sorted([OWNER_ID, 11, 13])


def test_a_blocked_admin_is_skipped_until_they_write_again(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    BotAdmin.objects.create(telegram_id=12)
    bot.block_chat(12)
    notify_admins("one", purpose="test")
    bot.unblock_chat(12)
    report = notify_admins("two", purpose="test")
    assert report.skipped == [12]
    post_update(make_message_update("/start", chat_id=12, user_id=12))
    assert not BlockedChat.objects.filter(chat_id=12).exists()
    assert 12 in notify_admins("three", purpose="test").sent


def test_a_server_error_for_one_admin_is_recorded_and_the_rest_proceed(
    bot: FakeTelegramServer,
) -> None:
    BotAdmin.objects.create(telegram_id=11)
    bot.fail_next("sendMessage", status=500, description="Internal Server Error")
    report = notify_admins("hello", purpose="test")
    assert len(report.failed) == 1 and len(report.sent) == 1
    assert not BlockedChat.objects.exists()  # a 500 is not a permanent refusal
