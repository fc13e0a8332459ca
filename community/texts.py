"""What admins and requesters read: notification texts, their edited forms, the buttons.

Plain text everywhere (no parse_mode), so names and bios need no escaping. Callback data is
``jr:a:<token>`` (approve) or ``jr:d:<token>`` (decline): 17 bytes, far below Telegram's 64.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop, ngettext

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
from telegram_bot.languages import operators_language
from telegram_bot.updates import ChatJoinRequest, User

CALLBACK_PREFIX = "jr:"
LIST_CALLBACK = "jr:list"
_CALLBACK_RE = re.compile(r"jr:([ad]):([A-Za-z0-9_-]{12})")
_ACTIONS = {"a": APPROVE, "d": DECLINE}
MAX_TEXT = TEXT_LIMIT
PANEL_LIMIT = 10

# Telegram's answers meaning "nothing left to decide": the request was handled elsewhere.
# Stored in the records in English (gettext_noop) and translated where shown (``_reason``).
ALREADY_HANDLED = {
    "HIDE_REQUESTER_MISSING": gettext_noop(
        "Already handled in Telegram: the request is no longer pending"
    ),
    "USER_ALREADY_PARTICIPANT": gettext_noop(
        "Already handled in Telegram: the user is already a member"
    ),
}
REPLACED = gettext_noop("Closed: replaced by a newer request from the same user")


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
                {"text": _("Approve"), "callback_data": f"jr:a:{token}"},
                {"text": _("Decline"), "callback_data": f"jr:d:{token}"},
            ]
        ]
    }


def display_name(user: User | None) -> str:
    if user is None:
        return _("someone")
    name = user.full_name.strip()
    if user.username:
        return f"{name} (@{user.username})" if name else f"@{user.username}"
    return name or _("user %(id)s") % {"id": user.id}


def when(unix_seconds: int) -> str:
    return datetime.fromtimestamp(unix_seconds, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")


def summary(request: ChatJoinRequest) -> str:
    """The notification text for a chat_join_request (stored: in the operators' language)."""
    chat, user = request.chat, request.from_user
    title = chat.title or chat.username or str(chat.id)
    with operators_language():
        lines = [
            _("Join request to %(title)s (%(id)s)") % {"title": title, "id": chat.id},
            _("From: %(name)s, id %(id)s") % {"name": display_name(user), "id": user.id},
        ]
        if user.language_code:
            lines.append(_("Language: %(code)s") % {"code": user.language_code})
        if request.bio:
            lines.append(_("Bio: %(bio)s") % {"bio": request.bio})
        link = request.invite_link
        if link is not None:
            name = f" ({link.name})" if link.name else ""
            lines.append(_("Invite link: %(link)s") % {"link": f"{link.invite_link}{name}"})
        lines.append(_("Requested: %(when)s") % {"when": when(request.date)})
    return "\n".join(lines)[:3000]


def copy_text(record: JoinRequestRecord) -> str:
    """The admins' copy of the notification as the record now stands: one text edited on
    every admin's copy, so in the operators' language."""
    with operators_language():
        status = status_line(record)
    return f"{record.summary}\n\n{status}"[:MAX_TEXT] if status else record.summary


def copy_markup(record: JoinRequestRecord) -> dict[str, Any] | None:
    with operators_language():
        return buttons(record.token) if record.pending else None


def status_line(record: JoinRequestRecord) -> str:
    decision = record.decision
    if record.status == DONE and decision is not None:
        return _past_by(decision) % _by(decision)
    if record.status == DECIDING and decision is not None:
        return (_verb_by(decision) + ": " + _("Telegram is busy, retrying.")) % _by(decision)
    if record.status == CLOSED:
        tried = (
            " ("
            + _("%(decision)s was not needed.") % {"decision": _verb_by(decision) % _by(decision)}
            + ")"
            if decision is not None
            else ""
        )
        return f"{_stored(record.closed_reason)}.{tried}"
    if record.stage == STAGE_QUESTION:
        return _("Waiting for the requester's answer to the question.")
    return record.note


def already_decided(record: JoinRequestRecord) -> str:
    """The alert for a press on a request that is no longer pending."""
    decision = record.decision
    if record.status == CLOSED:
        return f"{_stored(record.closed_reason)}."
    if decision is None:
        return _("This request is no longer pending.")
    if record.status == DECIDING:
        outcome = (
            _("approve, in progress") if decision.action == APPROVE else _("decline, in progress")
        )
    else:
        outcome = _("approved") if decision.action == APPROVE else _("declined")
    return _("Already decided by %(name)s at %(when)s: %(outcome)s.") % {
        **_by(decision),
        "outcome": outcome,
    }


def failure_note(decision: Decision, description: str) -> str:
    """Stored in the record: in the operators' language."""
    with operators_language():
        if decision.action == APPROVE:
            text = _("Approve by %(name)s failed: %(error)s. The request is still pending.")
        else:
            text = _("Decline by %(name)s failed: %(error)s. The request is still pending.")
        return text % {"name": _stored(decision.by_name), "error": description[:300]}


def question_text(record: JoinRequestRecord, question: str, timeout_seconds: int) -> str:
    return (
        _("Hello! You asked to join %(chat)s. Please answer this question within %(duration)s:")
        % {"chat": record.chat_title, "duration": _duration(timeout_seconds)}
        + f"\n\n{question}"
    )[:MAX_TEXT]


def pending_list(records: list[JoinRequestRecord], total: int) -> tuple[str, dict[str, Any]]:
    """The panel page: pending requests, each with its Approve / Decline buttons."""
    rows: list[list[dict[str, str]]] = []
    lines = [
        _("Pending join requests: %(total)s") % {"total": total}
        if records
        else _("No pending join requests.")
    ]
    for number, record in enumerate(records, start=1):
        waiting = " " + _("(waiting for the answer)") if record.stage == STAGE_QUESTION else ""
        lines.append(f"{number}. {record.user_name} -> {record.chat_title}{waiting}")
        rows.append(
            [
                {
                    "text": _("Approve %(number)s") % {"number": number},
                    "callback_data": f"jr:a:{record.token}",
                },
                {
                    "text": _("Decline %(number)s") % {"number": number},
                    "callback_data": f"jr:d:{record.token}",
                },
            ]
        )
    if total > len(records):
        lines.append(_("... and %(count)s more.") % {"count": total - len(records)})
    rows.append([{"text": _("Refresh"), "callback_data": LIST_CALLBACK}])
    rows.append([{"text": _("Back"), "callback_data": "panel:home"}])
    return "\n".join(lines)[:MAX_TEXT], {"inline_keyboard": rows}


def past(action: str) -> str:
    return _("Approved") if action == APPROVE else _("Declined")


def _past_by(decision: Decision) -> str:
    if decision.action == APPROVE:
        return _("Approved by %(name)s at %(when)s.")
    return _("Declined by %(name)s at %(when)s.")


def _verb_by(decision: Decision) -> str:
    if decision.action == APPROVE:
        return _("Approve by %(name)s at %(when)s")
    return _("Decline by %(name)s at %(when)s")


def _by(decision: Decision) -> dict[str, str]:
    # A policy's name is stored in English and translated here; an admin's name has no
    # translation and stays as it is.
    return {"name": _stored(decision.by_name), "when": when(decision.at)}


def _stored(text: str) -> str:
    """A text stored in English (gettext_noop), in the active language; gettext("") would be
    the catalogue's header."""
    return _(text) if text else ""


def _duration(seconds: int) -> str:
    if seconds % 60 == 0:
        minutes = seconds // 60
        return ngettext("%(count)d minute", "%(count)d minutes", minutes) % {"count": minutes}
    return ngettext("%(count)d second", "%(count)d seconds", seconds) % {"count": seconds}
