"""Security through the webhook: roles, allowed chats, rate limits, quiet refusals."""

from __future__ import annotations

from typing import Any

from telegram_bot.models import BotAdmin
from tests.builders import make_callback_update, make_message_update
from tests.conftest import OWNER_ID
from tests.fakes.telegram import FakeTelegramServer


def texts_to(bot: FakeTelegramServer, chat_id: int) -> list[str]:
    return [c.params["text"] for c in bot.calls_to("sendMessage") if c.params["chat_id"] == chat_id]


def test_panel_is_refused_to_a_user_and_shown_to_an_admin(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    assert (
        post_update(make_message_update("/panel", chat_id=7, user_id=7))["X-Update-Outcome"]
        == "refused"
    )
    assert texts_to(bot, 7) == ["This is for admins only."]
    BotAdmin.objects.create(telegram_id=8)
    assert (
        post_update(make_message_update("/panel", chat_id=8, user_id=8))["X-Update-Outcome"]
        == "processed"
    )
    call = bot.calls_to("sendMessage")[-1]
    assert call.params["text"] == "Admin panel"
    buttons = [row[0]["callback_data"] for row in call.params["reply_markup"]["inline_keyboard"]]
    assert "panel:admins" in buttons


def test_help_lists_more_for_admins(bot: FakeTelegramServer, post_update: Any) -> None:
    post_update(make_message_update("/help", chat_id=7, user_id=7))
    post_update(make_message_update("/help", chat_id=OWNER_ID, user_id=OWNER_ID))
    user_help, owner_help = texts_to(bot, 7)[0], texts_to(bot, OWNER_ID)[0]
    assert "/start" in user_help and "/panel" not in user_help
    assert "/panel" in owner_help and "/addadmin" in owner_help


def test_refusals_are_themselves_rate_limited(bot: FakeTelegramServer, post_update: Any) -> None:
    for _ in range(5):
        post_update(make_message_update("/panel", chat_id=7, user_id=7))
    assert texts_to(bot, 7) == ["This is for admins only."]


def test_a_user_over_the_rate_limit_is_refused_once_then_ignored(
    bot: FakeTelegramServer, post_update: Any, settings: Any
) -> None:
    settings.RATE_LIMIT_USER_PER_MINUTE = 3
    outcomes = [
        post_update(make_message_update("/start", chat_id=7, user_id=7))["X-Update-Outcome"]
        for _ in range(6)
    ]
    assert outcomes == ["processed"] * 3 + ["refused"] * 3
    assert texts_to(bot, 7).count("Too many requests. Please wait a minute.") == 1
    assert len(texts_to(bot, 7)) == 4


def test_admins_are_not_rate_limited(
    bot: FakeTelegramServer, post_update: Any, settings: Any
) -> None:
    settings.RATE_LIMIT_USER_PER_MINUTE = 1
    for _ in range(3):
        assert (
            post_update(make_message_update("/start", chat_id=OWNER_ID, user_id=OWNER_ID)).json()[
                "outcome"
            ]
            == "processed"
        )


def test_a_chat_over_its_rate_limit_is_refused_quietly(
    bot: FakeTelegramServer, post_update: Any, settings: Any
) -> None:
    settings.RATE_LIMIT_CHAT_PER_MINUTE = 2
    outcomes = [
        post_update(make_message_update("/start", chat_id=-100, user_id=20 + i))["X-Update-Outcome"]
        for i in range(4)
    ]
    assert outcomes == ["processed", "processed", "refused", "refused"]
    assert len(texts_to(bot, -100)) == 2  # no refusal message in a group


def test_ordinary_group_messages_are_not_rate_limited(
    bot: FakeTelegramServer, post_update: Any, settings: Any
) -> None:
    settings.RATE_LIMIT_USER_PER_MINUTE = 1
    settings.RATE_LIMIT_CHAT_PER_MINUTE = 1
    outcomes = {
        post_update(make_message_update("chatting", chat_id=-100, user_id=7))["X-Update-Outcome"]
        for _ in range(5)
    }
    assert "refused" not in outcomes


def test_chats_outside_the_allowed_list_are_ignored(
    bot: FakeTelegramServer, post_update: Any, settings: Any
) -> None:
    settings.ALLOWED_CHAT_IDS = [-100]
    assert (
        post_update(make_message_update("/start", chat_id=-200, user_id=7))["X-Update-Outcome"]
        == "ignored"
    )
    assert (
        post_update(make_message_update("/start", chat_id=-100, user_id=7))["X-Update-Outcome"]
        == "processed"
    )
    # Private chats are always allowed (users must reach support).
    assert (
        post_update(make_message_update("/start", chat_id=7, user_id=7))["X-Update-Outcome"]
        == "processed"
    )
    assert texts_to(bot, -200) == []


def test_a_non_admin_pressing_an_admin_button_gets_an_alert_and_nothing_changes(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    BotAdmin.objects.create(telegram_id=8)
    response = post_update(make_callback_update("panel:adm_rm:8", user_id=7))
    assert response["X-Update-Outcome"] == "refused"
    answer = bot.calls_to("answerCallbackQuery")[-1]
    assert answer.params["show_alert"] is True
    assert BotAdmin.objects.filter(telegram_id=8).exists()


def test_an_admin_who_is_not_owner_cannot_remove_admins(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    BotAdmin.objects.create(telegram_id=8)
    BotAdmin.objects.create(telegram_id=9)
    post_update(make_callback_update("panel:adm_rm:9", user_id=8))
    assert BotAdmin.objects.filter(telegram_id=9).exists()


def test_the_owner_removes_an_admin_from_the_panel(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    BotAdmin.objects.create(telegram_id=9)
    response = post_update(make_callback_update("panel:adm_rm:9", user_id=OWNER_ID))
    assert response["X-Update-Outcome"] == "processed"
    assert not BotAdmin.objects.filter(telegram_id=9).exists()
    edit = bot.calls_to("editMessageText")[-1]
    assert "9 (added)" not in edit.params["text"]


def test_a_malformed_admin_button_is_refused_with_an_alert(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    post_update(make_callback_update("panel:adm_rm:abc", user_id=OWNER_ID))
    answer = bot.calls_to("answerCallbackQuery")[-1]
    assert answer.params["text"] == "This button is not valid."


def test_the_owner_adds_and_removes_admins_with_commands(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    post_update(make_message_update("/addadmin 55", chat_id=OWNER_ID, user_id=OWNER_ID))
    assert BotAdmin.objects.filter(telegram_id=55).exists()
    post_update(make_message_update("/addadmin -3", chat_id=OWNER_ID, user_id=OWNER_ID))
    post_update(make_message_update(f"/removeadmin {OWNER_ID}", chat_id=OWNER_ID, user_id=OWNER_ID))
    post_update(make_message_update("/removeadmin 55", chat_id=OWNER_ID, user_id=OWNER_ID))
    assert texts_to(bot, OWNER_ID) == [
        "55 is now an admin.",
        "Usage: /addadmin <user id>\nA Telegram user id is a positive whole number up to "
        "4503599627370495 (for example 123456789).",
        "The owner cannot be removed.",
        "55 is no longer an admin.",
    ]
    assert not BotAdmin.objects.exists()


def test_a_second_press_of_a_button_whose_view_is_shown_is_not_an_error(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    """Telegram answers "message is not modified" to an edit that changes nothing (a double
    tap): the view is on screen, so the press succeeded; it must not end as a dead letter."""
    post_update(make_message_update("/panel", chat_id=OWNER_ID, user_id=OWNER_ID))
    panel = 1  # the fake numbers each chat's messages from 1: the panel is the first
    assert bot.message(OWNER_ID, panel)["text"] == "Admin panel"
    outcomes = [
        post_update(make_callback_update("panel:admins", user_id=OWNER_ID, message_id=panel))[
            "X-Update-Outcome"
        ]
        for _ in range(2)
    ]
    assert outcomes == ["processed", "processed"]
    edits = bot.calls_to("editMessageText")
    assert len(edits) == 2 and "not modified" in edits[1].description
