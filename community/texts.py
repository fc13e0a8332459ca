"""What admins and requesters read: notification texts, their edited forms, the buttons.

Plain text everywhere (no parse_mode), so names and bios need no escaping. Callback data is
``jr:a:<token>`` (approve) or ``jr:d:<token>`` (decline): 17 bytes, far below Telegram's 64.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from community.records import (
    APPROVE,
    CLOSED,
    DECIDING,
    DECLINE,
    DONE,
    STAGE_QUESTION,
    Decision,
    JoinRequestRecord,
)
from telegram_bot.client import TEXT_LIMIT
from telegram_bot.updates import ChatJoinRequest, User

CALLBACK_PREFIX = "jr:"
LIST_CALLBACK = "jr:list"
_CALLBACK_RE = re.compile(r"jr:([ad]):([A-Za-z0-9_-]{12})")
_ACTIONS = {"a": APPROVE, "d": DECLINE}
MAX_TEXT = TEXT_LIMIT
PANEL_LIMIT = 10

# Telegram's answers meaning "nothing left to decide": the request was handled elsewhere.
ALREADY_HANDLED = {
    "HIDE_REQUESTER_MISSING": "Already handled in Telegram: the request is no longer pending",
    "USER_ALREADY_PARTICIPANT": "Already handled in Telegram: the user is already a member",
}
REPLACED = "Closed: replaced by a newer request from the same user"


def parse_callback(data: str) -> tuple[str, str] | None:
    """(action, token) from Approve / Decline callback data, or None when malformed."""
    match = _CALLBACK_RE.fullmatch(data)
    if match is None:
        return None
    return _ACTIONS[match[1]], match[2]


def buttons(token: str) -> dict[str, Any]:
    return {
        "inline_keyboard": [
            [
                {"text": "Approve", "callback_data": f"jr:a:{token}"},
                {"text": "Decline", "callback_data": f"jr:d:{token}"},
            ]
        ]
    }


def display_name(user: User | None) -> str:
    if user is None:
        return "someone"
    name = user.full_name.strip()
    if user.username:
        return f"{name} (@{user.username})" if name else f"@{user.username}"
    return name or f"user {user.id}"


def when(unix_seconds: int) -> str:
    return datetime.fromtimestamp(unix_seconds, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")


def summary(request: ChatJoinRequest) -> str:
    """The notification text for a chat_join_request."""
    chat, user = request.chat, request.from_user
    title = chat.title or chat.username or str(chat.id)
    lines = [
        f"Join request to {title} ({chat.id})",
        f"From: {display_name(user)}, id {user.id}",
    ]
    if user.language_code:
        lines.append(f"Language: {user.language_code}")
    if request.bio:
        lines.append(f"Bio: {request.bio}")
    link = request.invite_link
    if link is not None:
        name = f" ({link.name})" if link.name else ""
        lines.append(f"Invite link: {link.invite_link}{name}")
    lines.append(f"Requested: {when(request.date)}")
    return "\n".join(lines)[:3000]


def copy_text(record: JoinRequestRecord) -> str:
    """The admins' copy of the notification as the record now stands."""
    status = status_line(record)
    return f"{record.summary}\n\n{status}"[:MAX_TEXT] if status else record.summary


def copy_markup(record: JoinRequestRecord) -> dict[str, Any] | None:
    return buttons(record.token) if record.pending else None


def status_line(record: JoinRequestRecord) -> str:
    decision = record.decision
    if record.status == DONE and decision is not None:
        return f"{past(decision.action)} by {decision.by_name} at {when(decision.at)}."
    if record.status == DECIDING and decision is not None:
        return (
            f"{verb(decision.action)} by {decision.by_name} at {when(decision.at)}: "
            "Telegram is busy, retrying."
        )
    if record.status == CLOSED:
        tried = (
            f" ({verb(decision.action)} by {decision.by_name} at {when(decision.at)} "
            "was not needed.)"
            if decision is not None
            else ""
        )
        return f"{record.closed_reason}.{tried}"
    if record.stage == STAGE_QUESTION:
        return "Waiting for the requester's answer to the question."
    return record.note


def already_decided(record: JoinRequestRecord) -> str:
    """The alert for a press on a request that is no longer pending."""
    decision = record.decision
    if record.status == CLOSED:
        return f"{record.closed_reason}."
    if decision is None:
        return "This request is no longer pending."
    outcome = (
        f"{verb(decision.action).lower()}, in progress"
        if record.status == DECIDING
        else past(decision.action).lower()
    )
    return f"Already decided by {decision.by_name} at {when(decision.at)}: {outcome}."


def failure_note(decision: Decision, description: str) -> str:
    return (
        f"{verb(decision.action)} by {decision.by_name} failed: {description[:300]}. "
        "The request is still pending."
    )


def question_text(record: JoinRequestRecord, question: str, timeout_seconds: int) -> str:
    return (
        f"Hello! You asked to join {record.chat_title}. Please answer this question within "
        f"{_duration(timeout_seconds)}:\n\n{question}"
    )[:MAX_TEXT]


def pending_list(records: list[JoinRequestRecord], total: int) -> tuple[str, dict[str, Any]]:
    """The panel page: pending requests, each with its Approve / Decline buttons."""
    rows: list[list[dict[str, str]]] = []
    lines = [f"Pending join requests: {total}" if records else "No pending join requests."]
    for number, record in enumerate(records, start=1):
        waiting = " (waiting for the answer)" if record.stage == STAGE_QUESTION else ""
        lines.append(f"{number}. {record.user_name} -> {record.chat_title}{waiting}")
        rows.append(
            [
                {"text": f"Approve {number}", "callback_data": f"jr:a:{record.token}"},
                {"text": f"Decline {number}", "callback_data": f"jr:d:{record.token}"},
            ]
        )
    if total > len(records):
        lines.append(f"... and {total - len(records)} more.")
    rows.append([{"text": "Refresh", "callback_data": LIST_CALLBACK}])
    rows.append([{"text": "Back", "callback_data": "panel:home"}])
    return "\n".join(lines)[:MAX_TEXT], {"inline_keyboard": rows}


def verb(action: str) -> str:
    return "Approve" if action == APPROVE else "Decline"


def past(action: str) -> str:
    return "Approved" if action == APPROVE else "Declined"


def _duration(seconds: int) -> str:
    if seconds % 60 == 0:
        minutes = seconds // 60
        return f"{minutes} minute{'s' if minutes != 1 else ''}"
    return f"{seconds} seconds"
