"""The one security step: the sender, or a refusal saying why and what the sender is told."""

from __future__ import annotations

from typing import Any

from telegram_bot.admins import Role
from telegram_bot.pipeline import security
from telegram_bot.state import KVStore
from telegram_bot.updates import parse_update
from tests.builders import make_message_update
from tests.conftest import OWNER_ID
from tests.fakes.telegram import FakeTelegramServer


def check(store: KVStore, text: str, **kwargs: Any) -> security.Sender | security.Refusal:
    chat_id = kwargs.pop("chat_id", 5)
    user_id = kwargs.pop("user_id", 5)
    update = parse_update(make_message_update(text, chat_id=chat_id, user_id=user_id))
    return security.check(store, update, **kwargs)


def test_an_ordinary_sender_passes_with_their_id(
    bot: FakeTelegramServer, memory_store: KVStore
) -> None:
    verdict = check(memory_store, "/start")
    assert isinstance(verdict, security.Sender) and verdict.user_id == 5


def test_each_refusal_names_its_reason_and_whether_the_whole_update_is_refused(
    bot: FakeTelegramServer, memory_store: KVStore, settings: Any
) -> None:
    settings.ALLOWED_CHAT_IDS = [-200]
    chat = check(memory_store, "hello", chat_id=-100)
    assert isinstance(chat, security.Refusal) and chat.reason == "chat" and chat.whole_update
    assert chat.message == ""
    other_bot = check(memory_store, "/start@someone_else_bot", chat_id=-200)
    assert isinstance(other_bot, security.Refusal) and other_bot.reason == "addressee"
    role = check(memory_store, "/panel", role=Role.ADMIN)
    assert isinstance(role, security.Refusal) and role.reason == "role"
    assert not role.whole_update and role.sender.user_id == 5 and role.message
    assert isinstance(
        check(memory_store, "/panel", role=Role.ADMIN, user_id=OWNER_ID), security.Sender
    )
    settings.RATE_LIMIT_EXPENSIVE_PER_MINUTE = 1
    assert isinstance(check(memory_store, "/stats", expensive=True), security.Sender)
    expensive = check(memory_store, "/stats", expensive=True)
    assert isinstance(expensive, security.Refusal) and expensive.reason == "expensive"
    assert isinstance(check(memory_store, "/stats", expensive=True, replay=True), security.Sender)
    settings.RATE_LIMIT_USER_PER_MINUTE = 1
    rate = check(memory_store, "/start", user_id=9)
    rate = check(memory_store, "/start", user_id=9)
    assert isinstance(rate, security.Refusal) and rate.reason == "rate"
