"""Shared helpers of the support tests: what the fake Bot API received, and update builders."""

from __future__ import annotations

from typing import Any

from support import services
from support.models import Ticket, TicketMessage
from support.services import Author, Origin
from support.validation import Content
from tests.builders import make_callback_update, make_message_update, next_update_id
from tests.fakes.telegram import Call, FakeTelegramServer

USER = 2001


def open_ticket(
    kind: str = "text", *, text: str = "", file_id: str = "", user_id: int = 77
) -> tuple[Ticket, TicketMessage]:
    """A ticket opened by ``user_id`` with one entry, through the service (no update)."""
    entry, _ = services.ticket_open(
        bot_id=123456789,
        user_id=user_id,
        chat_id=user_id,
        author=Author(name="Alice", telegram_id=user_id),
        origin=Origin(update_id=next_update_id(), chat_id=user_id, message_id=1),
        content=Content(kind=kind, text=text, file_id=file_id),
    )
    return entry.ticket, entry


def sent(
    bot: FakeTelegramServer, method: str = "sendMessage", chat_id: int | None = None
) -> list[Call]:
    """Successful calls of ``method`` (to ``chat_id``)."""
    return [
        call
        for call in bot.calls_to(method)
        if not call.failed and (chat_id is None or int(call.params["chat_id"]) == chat_id)
    ]


def texts(bot: FakeTelegramServer, chat_id: int) -> list[str]:
    return [call.params["text"] for call in sent(bot, "sendMessage", chat_id)]


def last_message_id(bot: FakeTelegramServer, chat_id: int, text_part: str = "") -> int:
    """The id of the last message the fake delivered to ``chat_id`` containing ``text_part``."""
    # The fake numbers the messages of each chat from 1 and keeps them (bot.message).
    message_id = len([c for c in bot.calls if _new_message_in(c, chat_id)])
    while message_id > 0:
        stored = bot.message(chat_id, message_id) or {}
        if text_part in str(stored.get("text") or stored.get("caption") or ""):
            return message_id
        message_id -= 1
    raise AssertionError(f"no message to {chat_id} containing {text_part!r}")


def _new_message_in(call: Call, chat_id: int) -> bool:
    return (
        not call.failed
        and call.method in ("sendMessage", "sendPhoto", "sendDocument", "sendVoice", "copyMessage")
        and int(call.params["chat_id"]) == chat_id
    )


def message(text: str | None, *, user_id: int = USER, **extra: Any) -> dict[str, Any]:
    return make_message_update(text, chat_id=user_id, user_id=user_id, **extra)


def reply_to(
    message_id: int, text: str | None, *, user_id: int = USER, **extra: Any
) -> dict[str, Any]:
    original = {
        "message_id": message_id,
        "date": 1,
        "chat": {"id": user_id, "type": "private", "first_name": "Test"},
        "from": {"id": 123456789, "is_bot": True, "first_name": "Fake Bot"},
        "text": "...",
    }
    return message(text, user_id=user_id, reply_to_message=original, **extra)


def button(data: str, *, user_id: int, message_id: int = 77) -> dict[str, Any]:
    return make_callback_update(data, user_id=user_id, message_id=message_id)
