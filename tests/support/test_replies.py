"""Answers from support: by replying to the notification, by the Reply button, and when they
cannot be delivered."""

from __future__ import annotations

import time
from typing import Any

import pytest

from support.models import Ticket, TicketMessage
from telegram_bot.jobs.models import Job
from telegram_bot.models import BlockedChat, BotAdmin, DeliveryFailure
from telegram_bot.pipeline import idempotency
from telegram_bot.state import KVStore
from tests.conftest import OWNER_ID
from tests.fakes.telegram import FakeTelegramServer
from tests.support.helpers import USER, button, last_message_id, message, reply_to, sent, texts


def open_ticket(post_update: Any, text: str = "/support my order never arrived") -> Ticket:
    assert post_update(message(text))["X-Update-Outcome"] == "processed"
    return Ticket.objects.order_by("-number").first()  # type: ignore[return-value]


def notification_id(bot: FakeTelegramServer, admin_id: int = OWNER_ID, number: int = 1) -> int:
    return last_message_id(bot, admin_id, f"#{number}")


def test_an_admin_answers_by_replying_to_the_notification(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    ticket = open_ticket(post_update)
    answer = reply_to(notification_id(bot), "It ships tomorrow.", user_id=OWNER_ID)
    assert post_update(answer)["X-Update-Outcome"] == "processed"
    [to_user] = [t for t in texts(bot, USER) if t.startswith("Support")]
    assert to_user == "Support · ticket #1\n\nIt ships tomorrow."
    assert texts(bot, OWNER_ID)[-1] == "Sent to the user of ticket #1."
    ticket.refresh_from_db()
    assert ticket.first_response_at is not None and ticket.assignee == f"tg:{OWNER_ID}"
    entry = ticket.messages.get(sender="admin")
    assert (entry.text, entry.delivery_state) == ("It ships tomorrow.", "delivered")
    assert Ticket.objects.count() == 1  # an answer never opens a ticket


def test_an_admin_answers_with_the_reply_button_and_one_message(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    ticket = open_ticket(post_update)
    press = button(f"sup:reply:{ticket.pk}", user_id=OWNER_ID, message_id=notification_id(bot))
    assert post_update(press)["X-Update-Outcome"] == "processed"
    assert "Send your answer to ticket #1" in texts(bot, OWNER_ID)[-1]
    post_update(message("Refund issued.", user_id=OWNER_ID))
    assert texts(bot, USER)[-1] == "Support · ticket #1\n\nRefund issued."
    assert texts(bot, OWNER_ID)[-1] == "Sent to the user of ticket #1."
    # One message only: the next one is not an answer.
    post_update(message("note to self", user_id=OWNER_ID))
    assert ticket.messages.filter(sender="admin").count() == 1
    assert "note to self" not in texts(bot, USER)[-1]


def test_an_expired_reply_button_sends_nothing_to_the_user(
    bot: FakeTelegramServer, post_update: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    ticket = open_ticket(post_update)
    post_update(button(f"sup:reply:{ticket.pk}", user_id=OWNER_ID))
    later = int(time.time() * 1000) + 901_000
    monkeypatch.setattr("telegram_bot.state.workflows._now_ms", lambda: later)
    post_update(message("late answer", user_id=OWNER_ID))
    assert texts(bot, OWNER_ID)[-1] == "Your answer to ticket #1 expired. Press Reply again."
    assert len(texts(bot, USER)) == 1  # the confirmation only
    assert not ticket.messages.filter(sender="admin").exists()


@pytest.mark.parametrize(
    ("fields", "method", "kind", "file_id"),
    [
        (
            {"photo": [{"file_id": "ph-1", "file_unique_id": "p", "width": 9, "height": 9}]},
            "sendPhoto",
            "photo",
            "ph-1",
        ),
        (
            {"document": {"file_id": "doc-9", "file_unique_id": "d"}},
            "sendDocument",
            "document",
            "doc-9",
        ),
        (
            {"voice": {"file_id": "vo-9", "file_unique_id": "v", "duration": 2}},
            "sendVoice",
            "voice",
            "vo-9",
        ),
    ],
)
def test_a_file_answer_reaches_the_user_by_file_id_marked_with_the_number(
    bot: FakeTelegramServer,
    post_update: Any,
    fields: dict[str, Any],
    method: str,
    kind: str,
    file_id: str,
) -> None:
    open_ticket(post_update)
    post_update(
        reply_to(notification_id(bot), None, user_id=OWNER_ID, caption="see this", **fields)
    )
    [call] = sent(bot, method, chat_id=USER)
    assert call.params[kind] == file_id
    assert TicketMessage.objects.get(sender="admin").file_id == file_id
    assert call.params["caption"] == "Support · ticket #1\n\nsee this"


def test_a_user_who_blocked_the_bot_does_not_get_the_answer_and_the_admin_is_told(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    ticket = open_ticket(post_update)
    bot.block_chat(USER)
    post_update(reply_to(notification_id(bot), "Are you there?", user_id=OWNER_ID))
    assert texts(bot, OWNER_ID)[-1].startswith(
        "Not delivered to the user of ticket #1: the user blocked the bot"
    )
    entry = ticket.messages.get(sender="admin")
    assert entry.delivery_state == "not delivered" and "blocked" in entry.delivery_error
    failure = DeliveryFailure.objects.get(chat_id=USER)
    assert failure.purpose == "support #1" and "blocked" in failure.description
    assert BlockedChat.objects.filter(chat_id=USER).exists()
    assert not Job.objects.exists()  # a permanent refusal is not retried
    assert sent(bot, chat_id=USER)[-1].params["text"].startswith("Ticket #1 opened")


def test_a_redelivered_answer_reaches_the_user_once(
    bot: FakeTelegramServer, post_update: Any, memory_store: KVStore
) -> None:
    open_ticket(post_update)
    answer = reply_to(notification_id(bot), "Once only.", user_id=OWNER_ID)
    post_update(answer)
    idempotency.forget(memory_store, answer["update_id"])
    assert post_update(answer)["X-Update-Outcome"] == "processed"
    assert texts(bot, USER).count("Support · ticket #1\n\nOnce only.") == 1
    assert TicketMessage.objects.filter(sender="admin").count() == 1


def test_an_admin_cannot_answer_a_closed_ticket(bot: FakeTelegramServer, post_update: Any) -> None:
    ticket = open_ticket(post_update)
    notice = notification_id(bot)
    post_update(message("/close"))
    post_update(reply_to(notice, "too late?", user_id=OWNER_ID))
    assert texts(bot, OWNER_ID)[-1] == "Ticket #1 is closed; reopen it before answering."
    post_update(button(f"sup:reply:{ticket.pk}", user_id=OWNER_ID))
    alert = bot.calls_to("answerCallbackQuery")[-1].params
    assert alert["text"] == "Ticket #1 is closed; reopen it to answer." and alert["show_alert"]
    assert not ticket.messages.filter(sender="admin").exists()
    assert not any("too late" in t for t in texts(bot, USER))


def test_a_closed_ticket_cannot_be_answered_from_a_pending_reply_button(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    ticket = open_ticket(post_update)
    post_update(button(f"sup:reply:{ticket.pk}", user_id=OWNER_ID))
    post_update(message("/close"))
    post_update(message("my answer", user_id=OWNER_ID))
    assert texts(bot, OWNER_ID)[-1] == "Ticket #1 is closed; reopen it before answering."
    assert not ticket.messages.filter(sender="admin").exists()


@pytest.mark.parametrize(
    "data",
    [
        "sup:reply:abc",
        "sup:reply:",
        "sup:reply:1:2",
        "sup:resolve:0",
        "sup:nope:1",
        "sup:resolve:1:x",
    ],
)
def test_malformed_button_data_is_refused(
    bot: FakeTelegramServer, post_update: Any, data: str
) -> None:
    open_ticket(post_update)
    post_update(button(data, user_id=OWNER_ID))
    alert = bot.calls_to("answerCallbackQuery")[-1].params
    assert alert["text"] == "This button is not valid."
    assert Ticket.objects.get().is_open
    assert TicketMessage.objects.count() == 1


def test_buttons_for_a_ticket_that_does_not_exist_are_refused(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    for data in ("sup:reply:999", "sup:resolve:999", "sup:view:999:1"):
        post_update(button(data, user_id=OWNER_ID))
        assert (
            bot.calls_to("answerCallbackQuery")[-1].params["text"] == "This ticket does not exist."
        )
    assert not TicketMessage.objects.exists()


def test_a_user_cannot_press_the_admin_buttons(bot: FakeTelegramServer, post_update: Any) -> None:
    ticket = open_ticket(post_update)
    for data in (f"sup:reply:{ticket.pk}", f"sup:resolve:{ticket.pk}", "sup:list:1"):
        assert post_update(button(data, user_id=USER))["X-Update-Outcome"] == "refused"
    ticket.refresh_from_db()
    assert ticket.is_open and ticket.messages.count() == 1


def test_an_empty_or_oversized_answer_is_refused(bot: FakeTelegramServer, post_update: Any) -> None:
    open_ticket(post_update)
    notice = notification_id(bot)
    post_update(reply_to(notice, "   ", user_id=OWNER_ID))
    assert texts(bot, OWNER_ID)[-1].startswith("The message is empty.")
    post_update(reply_to(notice, "a" * 4001, user_id=OWNER_ID))
    assert "too long" in texts(bot, OWNER_ID)[-1]
    assert not TicketMessage.objects.filter(sender="admin").exists()
    assert len(texts(bot, USER)) == 1


def test_a_second_admin_answers_the_same_ticket_from_their_own_notification(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    BotAdmin.objects.create(telegram_id=11)
    ticket = open_ticket(post_update)
    post_update(reply_to(notification_id(bot, 11), "From admin 11", user_id=11))
    assert texts(bot, USER)[-1] == "Support · ticket #1\n\nFrom admin 11"
    ticket.refresh_from_db()
    assert ticket.assignee == "tg:11"
