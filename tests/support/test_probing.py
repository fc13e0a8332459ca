"""What a user who is no admin can learn or do with crafted updates: a Close button with
another user's ticket id answers exactly as one with an id that does not exist, and a private
message that names no sender (no ``from``) opens no ticket, no workflow, for nobody."""

from __future__ import annotations

from typing import Any

from support.models import Ticket, TicketMessage
from telegram_bot.state import KVStore
from tests.fakes.telegram import FakeTelegramServer
from tests.support.helpers import USER, button, message, texts
from tests.support.test_lifecycle import open_ticket

STRANGER = 3001


def alert_for(bot: FakeTelegramServer, post_update: Any, data: str) -> dict[str, Any]:
    post_update(button(data, user_id=STRANGER))
    params = dict(bot.calls_to("answerCallbackQuery")[-1].params)
    params.pop("callback_query_id")
    return params


def test_close_answers_the_same_for_another_users_ticket_and_for_none(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    theirs = open_ticket(post_update, "not yours", user_id=USER)
    missing = Ticket.objects.order_by("-pk").first().pk + 1000  # type: ignore[union-attr]
    existing = alert_for(bot, post_update, f"sup:close:{theirs.pk}")
    absent = alert_for(bot, post_update, f"sup:close:{missing}")
    assert existing == absent
    assert "not your" not in existing["text"] and "not exist" not in existing["text"]
    theirs.refresh_from_db()
    assert theirs.is_open


def without_sender(update: dict[str, Any]) -> dict[str, Any]:
    update["message"].pop("from")
    return update


def test_a_private_message_without_a_sender_opens_no_ticket(
    bot: FakeTelegramServer, post_update: Any, memory_store: KVStore
) -> None:
    for text in ("/support my problem", "/support", "a plain message", "/close"):
        response = post_update(without_sender(message(text, user_id=USER)))
        assert response.status_code == 200
        assert response["X-Update-Outcome"] != "dead_letter"
    assert not Ticket.objects.exists()
    assert not TicketMessage.objects.exists()
    assert memory_store.scan("workflow:", None, 10)[0] == []
    assert texts(bot, USER) == []


def test_the_same_messages_with_a_sender_open_a_workflow_and_a_ticket(
    bot: FakeTelegramServer, post_update: Any, memory_store: KVStore
) -> None:
    post_update(message("/support", user_id=USER))
    assert len(memory_store.scan("workflow:", None, 10)[0]) == 1
    post_update(message("/support my problem", user_id=USER))
    assert Ticket.objects.get().user_id == USER
