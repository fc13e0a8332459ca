"""A ticket's life: follow-ups, /close by the user, Resolve by support, reopening by replying."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone

from support.models import Ticket, TicketMessage
from telegram_bot.models import BotAdmin
from tests.conftest import OWNER_ID
from tests.fakes.telegram import FakeTelegramServer
from tests.support.helpers import USER, button, last_message_id, message, reply_to, sent, texts


def open_ticket(post_update: Any, text: str = "my problem", user_id: int = USER) -> Ticket:
    post_update(message(f"/support {text}", user_id=user_id))
    return Ticket.objects.filter(user_id=user_id).order_by("-number").first()  # type: ignore[return-value]


def test_a_follow_up_reaches_the_admins_on_the_same_ticket(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    BotAdmin.objects.create(telegram_id=11)
    ticket = open_ticket(post_update)
    post_update(message("more details: order 42"))
    assert Ticket.objects.count() == 1
    assert [m.text for m in ticket.messages.all()] == ["my problem", "more details: order 42"]
    assert texts(bot, USER)[-1] == "Added to ticket #1."
    for admin in (OWNER_ID, 11):
        notice = sent(bot, chat_id=admin)[-1].params
        assert notice["text"].startswith("Ticket #1, new message from Test (id 2001):")
        assert "more details: order 42" in notice["text"]
        assert (
            notice["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
            == f"sup:reply:{ticket.pk}"
        )
    # Replying to the follow-up's notification answers the same ticket.
    follow_up_notice = last_message_id(bot, OWNER_ID, "order 42")
    post_update(reply_to(follow_up_notice, "Found order 42.", user_id=OWNER_ID))
    assert texts(bot, USER)[-1] == "Support · ticket #1\n\nFound order 42."


def test_a_reply_to_a_message_of_an_older_open_ticket_goes_to_that_ticket(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    first = open_ticket(post_update, "first")
    confirmation_of_first = last_message_id(bot, USER, "Ticket #1 opened")
    second = open_ticket(post_update, "second")
    post_update(reply_to(confirmation_of_first, "about the first one"))
    assert first.messages.last().text == "about the first one"  # type: ignore[union-attr]
    assert second.messages.count() == 1


def test_close_closes_the_users_ticket_and_both_sides_are_told(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    ticket = open_ticket(post_update)
    post_update(message("/close"))
    ticket.refresh_from_db()
    assert (ticket.status, ticket.closed_by) == ("closed", "user")
    assert ticket.closed_at is not None
    assert (
        texts(bot, USER)[-1]
        == "Ticket #1 is closed. To reopen it within 7 days, reply to this message."
    )
    assert texts(bot, OWNER_ID)[-1] == "Ticket #1 was closed by Test (id 2001)."
    post_update(message("/close"))
    assert texts(bot, USER)[-1] == "You have no open support ticket."


def test_close_with_several_open_tickets_asks_which_one(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    first = open_ticket(post_update, "first")
    second = open_ticket(post_update, "second")
    post_update(message("/close"))
    question = sent(bot, chat_id=USER)[-1].params
    assert question["text"] == "Which ticket should be closed?"
    data = [row[0]["callback_data"] for row in question["reply_markup"]["inline_keyboard"]]
    assert data == [f"sup:close:{second.pk}", f"sup:close:{first.pk}"]
    post_update(button(f"sup:close:{first.pk}", user_id=USER))
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.status, second.status) == ("closed", "open")
    post_update(message("/close #2"))
    second.refresh_from_db()
    assert second.status == "closed"


def test_close_refuses_tickets_of_other_users_and_bad_numbers(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    other = open_ticket(post_update, "not yours", user_id=3001)
    open_ticket(post_update, "mine")
    post_update(message("/close 1"))
    assert texts(bot, USER)[-1] == "You have no ticket #1."
    post_update(message("/close banana"))
    assert texts(bot, USER)[-1].startswith("Usage: /close")
    post_update(button(f"sup:close:{other.pk}", user_id=USER))
    assert bot.calls_to("answerCallbackQuery")[-1].params["text"] == "You have no such ticket."
    other.refresh_from_db()
    assert other.is_open


def test_resolve_closes_the_ticket_and_tells_the_user(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    ticket = open_ticket(post_update)
    notice = last_message_id(bot, OWNER_ID, "#1")
    post_update(button(f"sup:resolve:{ticket.pk}", user_id=OWNER_ID, message_id=notice))
    ticket.refresh_from_db()
    assert (ticket.status, ticket.closed_by) == ("closed", "admin")
    assert texts(bot, USER)[-1].startswith("Ticket #1 was resolved by support.")
    answer = bot.calls_to("answerCallbackQuery")[-1].params
    assert answer["text"] == "Ticket #1 resolved. The user was told."
    [edit] = bot.calls_to("editMessageReplyMarkup")
    assert (edit.params["chat_id"], edit.params["message_id"]) == (OWNER_ID, notice)
    # A second press (another admin, an old notification) changes nothing.
    post_update(button(f"sup:resolve:{ticket.pk}", user_id=OWNER_ID, message_id=notice))
    assert bot.calls_to("answerCallbackQuery")[-1].params["text"] == "Ticket #1 is already closed."
    assert len([t for t in texts(bot, USER) if "resolved" in t]) == 1


def test_the_user_reopens_a_resolved_ticket_by_replying_within_7_days(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    ticket = open_ticket(post_update)
    post_update(button(f"sup:resolve:{ticket.pk}", user_id=OWNER_ID))
    resolved_notice = last_message_id(bot, USER, "resolved")
    Ticket.objects.filter(pk=ticket.pk).update(closed_at=timezone.now() - timedelta(days=6))
    post_update(reply_to(resolved_notice, "It broke again"))
    ticket.refresh_from_db()
    assert (ticket.status, ticket.reopened_count, ticket.closed_at) == ("open", 1, None)
    assert Ticket.objects.count() == 1
    entry = ticket.messages.last()
    assert entry is not None and (entry.text, entry.event) == ("It broke again", "reopened_by_user")
    assert texts(bot, USER)[-1] == "Ticket #1 is open again; support has your message."
    notice = sent(bot, chat_id=OWNER_ID)[-1].params
    assert notice["text"].startswith("Ticket #1 reopened by Test (id 2001):")
    assert "reply_markup" in notice


def test_a_reply_after_7_days_does_not_reopen(bot: FakeTelegramServer, post_update: Any) -> None:
    ticket = open_ticket(post_update)
    post_update(message("/close"))
    closed_notice = last_message_id(bot, USER, "is closed")
    Ticket.objects.filter(pk=ticket.pk).update(
        closed_at=timezone.now() - timedelta(days=7, minutes=1)
    )
    post_update(reply_to(closed_notice, "still broken"))
    ticket.refresh_from_db()
    assert ticket.status == "closed"
    assert texts(bot, USER)[-1].startswith("Ticket #1 was closed more than 7 days ago")
    assert not TicketMessage.objects.filter(text="still broken").exists()


def test_a_plain_message_after_closing_neither_reopens_nor_opens_a_ticket(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    ticket = open_ticket(post_update)
    post_update(message("/close"))
    post_update(message("thanks!"))
    ticket.refresh_from_db()
    assert ticket.status == "closed" and Ticket.objects.count() == 1
    assert not TicketMessage.objects.filter(text="thanks!").exists()
    assert texts(bot, USER)[-1] == (
        "You have no open support ticket. Send /support <your question> to open one.\n"
        "To reopen ticket #1, reply to one of its messages (possible for 7 days after closing)."
    )


def test_the_user_can_reopen_by_replying_to_their_own_ticket_message(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    opening = message("/support printer jam")
    post_update(opening)
    post_update(message("/close"))
    post_update(reply_to(opening["message"]["message_id"], "jammed again"))
    assert Ticket.objects.get().status == "open"


def test_only_the_ticket_conversation_is_stored(bot: FakeTelegramServer, post_update: Any) -> None:
    post_update(message("hello bot"))  # no ticket: not stored
    group = message("chatter in the group")
    group["message"]["chat"] = {"id": -100500, "type": "supergroup", "title": "Community"}
    post_update(group)
    post_update(message("/support"))
    post_update(message("the actual request"))
    post_update(message("/help"))
    assert list(TicketMessage.objects.values_list("text", flat=True)) == ["the actual request"]


def test_resolving_for_a_user_who_blocked_the_bot_warns_the_admin(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    ticket = open_ticket(post_update)
    bot.block_chat(USER)
    post_update(button(f"sup:resolve:{ticket.pk}", user_id=OWNER_ID))
    ticket.refresh_from_db()
    assert ticket.status == "closed"
    alert = bot.calls_to("answerCallbackQuery")[-1].params
    assert alert["show_alert"] is True
    assert alert["text"].startswith(
        "Ticket #1 resolved. The user could not be told: the user blocked"
    )
    assert ticket.messages.get(event="resolved").delivery_state == "not delivered"


def test_help_lists_the_support_commands(bot: FakeTelegramServer, post_update: Any) -> None:
    post_update(message("/help"))
    help_text = texts(bot, USER)[-1]
    assert (
        "/support - contact support" in help_text
        and "/close - close your support ticket" in help_text
    )
