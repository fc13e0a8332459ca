"""Helpers of the staff-group tests: the forum group, messages written in a topic."""

from __future__ import annotations

from typing import Any

import pytest

from support.models import Ticket
from tests.builders import make_message_update
from tests.fakes.telegram import FakeTelegramServer
from tests.support.helpers import USER, message, sent

STAFF = -1001234567890
AGENT = 3001
AGENT_2 = 3002


@pytest.fixture
def staff_bot(bot: FakeTelegramServer, settings: Any) -> FakeTelegramServer:
    """The fake Bot API with a forum staff group configured."""
    settings.SUPPORT_STAFF_CHAT_ID = STAFF
    bot.set_chat(STAFF, "supergroup", title="Support staff", is_forum=True)
    return bot


def open_ticket(post_update: Any, text: str = "/support my order never arrived") -> Ticket:
    assert post_update(message(text))["X-Update-Outcome"] == "processed"
    return Ticket.objects.order_by("-number").first()  # type: ignore[return-value]


def in_topic(text: str | None, topic: int, *, user_id: int = AGENT, **extra: Any) -> dict[str, Any]:
    """A message a staff member writes in the topic ``topic`` of the staff group."""
    return make_message_update(
        text,
        chat_id=STAFF,
        user_id=user_id,
        chat_type="supergroup",
        message_thread_id=topic,
        is_topic_message=True,
        **extra,
    )


def topic_of(bot: FakeTelegramServer, topic: int) -> dict[str, Any]:
    with bot.lock:
        return dict(bot.results.topics[STAFF][topic])


def user_texts(bot: FakeTelegramServer) -> list[str]:
    return [call.params["text"] for call in sent(bot, "sendMessage", USER)]


def topic_calls(bot: FakeTelegramServer, method: str, topic: int) -> list[Any]:
    return [
        call for call in sent(bot, method, STAFF) if call.params.get("message_thread_id") == topic
    ]
