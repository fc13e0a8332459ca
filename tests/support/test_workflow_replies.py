"""A reply to a ticket's message always goes to that ticket, even while a workflow waits for
one message: the admin's Reply button (live or expired) never swallows an answer to another
ticket, and ``/support`` (live or expired) never turns a reply into a new ticket nor drops a
follow-up."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from support.models import Ticket
from tests.conftest import OWNER_ID
from tests.fakes.telegram import FakeTelegramServer
from tests.support.helpers import USER, button, last_message_id, message, reply_to, texts

OTHER_USER = 2002


def open_ticket(post_update: Any, text: str, user_id: int = USER) -> Ticket:
    assert post_update(message(f"/support {text}", user_id=user_id))["X-Update-Outcome"] == (
        "processed"
    )
    return Ticket.objects.order_by("-number").first()  # type: ignore[return-value]


def expire_workflows(monkeypatch: pytest.MonkeyPatch, seconds: int) -> None:
    """Move the workflows' clock past their TTL (still within the 24 h grace)."""
    later = int(time.time() * 1000) + seconds * 1000
    monkeypatch.setattr("telegram_bot.state.workflows._now_ms", lambda: later)


def answers(ticket: Ticket) -> list[str]:
    return list(ticket.messages.filter(sender="admin").values_list("text", flat=True))


# --- the admin's Reply button ------------------------------------------------------------------
@pytest.fixture
def two_tickets(bot: FakeTelegramServer, post_update: Any) -> tuple[Ticket, Ticket]:
    first = open_ticket(post_update, "first problem", user_id=USER)
    second = open_ticket(post_update, "second problem", user_id=OTHER_USER)
    return first, second


def test_an_expired_reply_button_does_not_swallow_a_reply_to_another_tickets_notification(
    bot: FakeTelegramServer,
    post_update: Any,
    monkeypatch: pytest.MonkeyPatch,
    two_tickets: tuple[Ticket, Ticket],
) -> None:
    first, second = two_tickets
    post_update(button(f"sup:reply:{first.pk}", user_id=OWNER_ID))
    expire_workflows(monkeypatch, 901)  # the Reply wait is 900 s
    notice_of_second = last_message_id(bot, OWNER_ID, "New ticket #2")
    post_update(reply_to(notice_of_second, "Answer for two.", user_id=OWNER_ID))
    assert answers(second) == ["Answer for two."]
    assert texts(bot, OTHER_USER)[-1] == "Support · ticket #2\n\nAnswer for two."
    assert texts(bot, OWNER_ID)[-1] == "Sent to the user of ticket #2."
    assert not any("expired" in text for text in texts(bot, OWNER_ID))
    assert answers(first) == []
    # The expired workflow is over: the next plain message is not told it expired either.
    post_update(message("note to self", user_id=OWNER_ID))
    assert "expired" not in texts(bot, OWNER_ID)[-1]
    assert answers(first) == [] and answers(second) == ["Answer for two."]


def test_an_expired_reply_button_does_not_swallow_a_reply_to_its_own_tickets_notification(
    bot: FakeTelegramServer,
    post_update: Any,
    monkeypatch: pytest.MonkeyPatch,
    two_tickets: tuple[Ticket, Ticket],
) -> None:
    first, _ = two_tickets
    post_update(button(f"sup:reply:{first.pk}", user_id=OWNER_ID))
    expire_workflows(monkeypatch, 901)
    post_update(
        reply_to(last_message_id(bot, OWNER_ID, "New ticket #1"), "Late.", user_id=OWNER_ID)
    )
    assert answers(first) == ["Late."]
    assert texts(bot, USER)[-1] == "Support · ticket #1\n\nLate."
    assert texts(bot, OWNER_ID)[-1] == "Sent to the user of ticket #1."


def test_an_expired_reply_button_still_says_so_for_a_message_addressed_to_no_ticket(
    bot: FakeTelegramServer,
    post_update: Any,
    monkeypatch: pytest.MonkeyPatch,
    two_tickets: tuple[Ticket, Ticket],
) -> None:
    first, second = two_tickets
    post_update(button(f"sup:reply:{first.pk}", user_id=OWNER_ID))
    expire_workflows(monkeypatch, 901)
    post_update(reply_to(999_999, "an answer to what?", user_id=OWNER_ID))  # not a ticket's
    assert texts(bot, OWNER_ID)[-1] == "Your answer to ticket #1 expired. Press Reply again."
    assert answers(first) == [] and answers(second) == []


def test_a_live_reply_button_gives_way_to_a_reply_to_another_tickets_notification(
    bot: FakeTelegramServer, post_update: Any, two_tickets: tuple[Ticket, Ticket]
) -> None:
    first, second = two_tickets
    post_update(button(f"sup:reply:{first.pk}", user_id=OWNER_ID))
    notice_of_second = last_message_id(bot, OWNER_ID, "New ticket #2")
    post_update(reply_to(notice_of_second, "Answer for two.", user_id=OWNER_ID))
    assert answers(second) == ["Answer for two."] and answers(first) == []
    assert texts(bot, OTHER_USER)[-1] == "Support · ticket #2\n\nAnswer for two."
    assert texts(bot, OWNER_ID)[-2] == "Sent to the user of ticket #2."
    assert texts(bot, OWNER_ID)[-1].startswith("Your answer to ticket #1 is cancelled")
    # Cancelled: the next plain message is not taken as the answer to #1.
    post_update(message("note to self", user_id=OWNER_ID))
    assert answers(first) == []
    assert "note to self" not in texts(bot, USER)[-1]


def test_a_live_reply_button_takes_a_reply_to_its_own_tickets_notification(
    bot: FakeTelegramServer, post_update: Any, two_tickets: tuple[Ticket, Ticket]
) -> None:
    first, _ = two_tickets
    post_update(button(f"sup:reply:{first.pk}", user_id=OWNER_ID))
    post_update(reply_to(last_message_id(bot, OWNER_ID, "New ticket #1"), "One.", user_id=OWNER_ID))
    assert answers(first) == ["One."]
    assert texts(bot, OWNER_ID)[-1] == "Sent to the user of ticket #1."  # nothing cancelled


def test_a_live_reply_button_takes_a_reply_to_a_message_of_no_ticket_as_its_answer(
    bot: FakeTelegramServer, post_update: Any, two_tickets: tuple[Ticket, Ticket]
) -> None:
    first, second = two_tickets
    post_update(button(f"sup:reply:{first.pk}", user_id=OWNER_ID))
    post_update(reply_to(999_999, "For one.", user_id=OWNER_ID))
    assert answers(first) == ["For one."] and answers(second) == []


# --- /support waiting for one message ----------------------------------------------------------
def test_a_reply_to_a_tickets_confirmation_after_support_is_a_follow_up_not_a_new_ticket(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    first = open_ticket(post_update, "first problem")
    confirmation = last_message_id(bot, USER, "Ticket #1 opened")
    post_update(message("/support"))
    post_update(reply_to(confirmation, "still broken"))
    assert Ticket.objects.count() == 1
    assert [m.text for m in first.messages.all()] == ["first problem", "still broken"]
    assert texts(bot, USER)[-2] == "Added to ticket #1."
    assert texts(bot, USER)[-1].startswith("Your /support request is cancelled")
    admin_notice = texts(bot, OWNER_ID)[-1]
    assert admin_notice.startswith("Ticket #1, new message") and "still broken" in admin_notice
    # The wait is over: the next plain message is a follow-up too, not a second ticket.
    post_update(message("and more"))
    assert Ticket.objects.count() == 1 and first.messages.count() == 3


def test_a_reply_to_the_users_own_ticket_message_after_support_is_a_follow_up(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    opening = message("/support first problem")
    post_update(opening)
    first = Ticket.objects.get()
    post_update(message("/support"))
    post_update(reply_to(opening["message"]["message_id"], "about this one"))
    assert Ticket.objects.count() == 1
    assert first.messages.last().text == "about this one"  # type: ignore[union-attr]


def test_a_reply_to_a_recently_closed_tickets_message_after_support_reopens_it(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    first = open_ticket(post_update, "first problem")
    post_update(message("/close"))
    closed_notice = last_message_id(bot, USER, "Ticket #1 is closed")
    post_update(message("/support"))
    post_update(reply_to(closed_notice, "it came back"))
    assert Ticket.objects.count() == 1
    first.refresh_from_db()
    assert first.is_open and first.messages.last().event == "reopened_by_user"  # type: ignore[union-attr]
    assert "Ticket #1 is open again; support has your message." in texts(bot, USER)


def test_a_reply_to_a_ticket_closed_too_long_ago_after_support_opens_the_requested_ticket(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    # /support asked for a new ticket, and the old one can no longer take the message.
    first = open_ticket(post_update, "first problem")
    post_update(message("/close"))
    closed_notice = last_message_id(bot, USER, "Ticket #1 is closed")
    Ticket.objects.filter(pk=first.pk).update(closed_at=timezone.now() - timedelta(days=8))
    post_update(message("/support"))
    post_update(reply_to(closed_notice, "a new problem"))
    second = Ticket.objects.get(number=2)
    assert second.messages.get().text == "a new problem"
    assert texts(bot, USER)[-1].startswith("Ticket #2 opened.")
    first.refresh_from_db()
    assert not first.is_open and first.messages.count() == 2


def test_an_expired_support_does_not_drop_a_reply_to_a_ticket(
    bot: FakeTelegramServer, post_update: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = open_ticket(post_update, "first problem")
    confirmation = last_message_id(bot, USER, "Ticket #1 opened")
    post_update(message("/support"))
    expire_workflows(monkeypatch, 601)
    post_update(reply_to(confirmation, "still broken"))
    assert first.messages.last().text == "still broken"  # type: ignore[union-attr]
    assert texts(bot, USER)[-1] == "Added to ticket #1."
    assert not any("expired" in text for text in texts(bot, USER))
    assert Ticket.objects.count() == 1


def test_an_expired_support_does_not_drop_a_plain_follow_up_to_an_open_ticket(
    bot: FakeTelegramServer, post_update: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = open_ticket(post_update, "first problem")
    post_update(message("/support"))
    expire_workflows(monkeypatch, 601)
    post_update(message("any news?"))
    assert Ticket.objects.count() == 1
    assert first.messages.last().text == "any news?"  # type: ignore[union-attr]
    assert texts(bot, USER)[-2] == "Added to ticket #1."
    assert texts(bot, USER)[-1] == (
        "Your /support request had expired, so this message was added to your open ticket #1. "
        "To open a new ticket instead, send /support again."
    )
    assert "any news?" in texts(bot, OWNER_ID)[-1]


def test_an_expired_support_with_an_open_ticket_refuses_bad_content_and_says_it_expired(
    bot: FakeTelegramServer, post_update: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = open_ticket(post_update, "first problem")
    post_update(message("/support"))
    expire_workflows(monkeypatch, 601)
    post_update(message("   "))
    assert first.messages.count() == 1
    assert texts(bot, USER)[-1].startswith("The message is empty.")
    assert texts(bot, USER)[-1].endswith(
        "Your /support request expired. Send /support again to open a ticket."
    )


def test_an_admin_waiting_in_support_who_replies_to_a_notification_answers_that_ticket(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    ticket = open_ticket(post_update, "a user's problem")
    post_update(message("/support", user_id=OWNER_ID))
    post_update(reply_to(last_message_id(bot, OWNER_ID, "New ticket #1"), "Hi!", user_id=OWNER_ID))
    assert Ticket.objects.count() == 1
    assert answers(ticket) == ["Hi!"]
    assert texts(bot, USER)[-1] == "Support · ticket #1\n\nHi!"


def test_a_live_reply_button_does_not_take_a_reply_to_a_closed_tickets_notification(
    bot: FakeTelegramServer, post_update: Any, two_tickets: tuple[Ticket, Ticket]
) -> None:
    first, second = two_tickets
    notice_of_second = last_message_id(bot, OWNER_ID, "New ticket #2")
    post_update(message("/close", user_id=OTHER_USER))
    post_update(button(f"sup:reply:{first.pk}", user_id=OWNER_ID))
    post_update(reply_to(notice_of_second, "meant for two", user_id=OWNER_ID))
    assert "Ticket #2 is closed; reopen it before answering." in texts(bot, OWNER_ID)
    assert answers(first) == [] and answers(second) == []
    assert not any("meant for two" in text for text in texts(bot, USER))
