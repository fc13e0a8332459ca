"""Helpers for the community tests: find the admins' copies, press their buttons."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from community.models import ChatPolicy
from community.records import JoinRequestRecord
from community.selectors import join_request_get
from telegram_bot.jobs.models import Job, JobStatus
from tests.builders import make_callback_update
from tests.fakes.telegram import FakeTelegramServer
from tests.fakes.telegram_core import Call


def question_policy(chat_id: int, **fields: Any) -> ChatPolicy:
    """A chat asking join requesters "What is two plus two?" (answer "four", 120 s)."""
    defaults: dict[str, Any] = {
        "mode": ChatPolicy.Mode.QUESTION,
        "question": "What is two plus two?",
        "answers": "four",
        "timeout_seconds": 120,
    }
    return ChatPolicy.objects.create(chat_id=chat_id, **{**defaults, **fields})


def notifications(bot: FakeTelegramServer) -> list[Call]:
    """Delivered sendMessage calls that carry join-request buttons."""
    return [
        call
        for call in bot.calls_to("sendMessage")
        if not call.failed and "jr:a:" in str(call.params.get("reply_markup"))
    ]


def button_data(call: Call) -> dict[str, str]:
    """{"Approve": data, "Decline": data} of a notification."""
    rows = call.params["reply_markup"]["inline_keyboard"]
    return {button["text"]: button["callback_data"] for row in rows for button in row}


def token_of(data: str) -> str:
    return data.rsplit(":", 1)[1]


def record_of(data: str) -> JoinRequestRecord | None:
    return join_request_get(token_of(data))


def copy_of(data: str, admin_id: int) -> int:
    """The message id of ``admin_id``'s copy of the notification carrying ``data``."""
    record = record_of(data)
    assert record is not None
    [message_id] = [mid for chat_id, mid in record.copies if chat_id == admin_id]
    return message_id


def press_update(
    data: str,
    *,
    user_id: int,
    name: str = "Test",
    message_id: int = 77,
    reply_markup: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A button press as Telegram sends it (the pressed message carries its keyboard)."""
    update = make_callback_update(data, user_id=user_id, message_id=message_id)
    update["callback_query"]["from"]["first_name"] = name
    if reply_markup is not None:
        update["callback_query"]["message"]["reply_markup"] = reply_markup
    return update


def alerts(bot: FakeTelegramServer) -> list[str]:
    return [
        call.params.get("text", "")
        for call in bot.calls_to("answerCallbackQuery")
        if call.params.get("show_alert")
    ]


def edits_to(bot: FakeTelegramServer, chat_id: int) -> list[Call]:
    return [
        call
        for call in bot.calls_to("editMessageText")
        if call.params["chat_id"] == chat_id and not call.failed
    ]


def succeeded(bot: FakeTelegramServer, method: str) -> list[Call]:
    return [call for call in bot.calls_to(method) if not call.failed]


def make_jobs_due() -> int:
    return Job.objects.filter(status=JobStatus.QUEUED).update(next_attempt=timezone.now())
