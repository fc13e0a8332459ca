"""Outgoing Telegram messages of the support desk, and their bookkeeping.

``deliver(entry)`` does whatever is still pending for a conversation entry (confirm to the
user, notify the admins, send an answer to the user) and records it, so running it again for
the same entry (a re-delivered update) sends nothing twice unless a process died between a
send and its record. Admin notifications go through the core's isolated ``notify_admins``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from support import services
from support.conf import reopen_window
from support.models import Ticket, TicketBotMessage, TicketMessage
from telegram_bot.bot import get_client
from telegram_bot.client import TelegramClient
from telegram_bot.errors import TelegramApiError
from telegram_bot.jobs.services import job_enqueue
from telegram_bot.notifications import delivery_failed, notify_admins

log = logging.getLogger(__name__)
MESSAGE_LIMIT = 4096
CAPTION_LIMIT = 1024
FILE_METHODS = {"photo": "sendPhoto", "document": "sendDocument", "voice": "sendVoice"}
RETRY_JOB = "support.deliver"
RETRYING = "; retrying automatically"
Event = TicketMessage.Event


@dataclass(frozen=True)
class Delivery:
    """What happened to the message meant for the user (``None``: nothing was due)."""

    delivered: bool | None
    error: str = ""
    retrying: bool = False  # a transient failure: the support.deliver job tries again


def deliver(entry: TicketMessage, *, client: TelegramClient | None = None) -> Delivery:
    """Send what is still pending for ``entry`` and record it."""
    client = client or get_client()
    ticket = entry.ticket
    result = Delivery(None)
    if _user_notice_due(entry):
        result = _send_to_user(client, ticket, entry)
    if _admin_notice_due(entry):
        _notify_admins(client, ticket, entry)
    return result


def buttons(ticket: Ticket) -> dict[str, Any]:
    """Reply and Resolve, under every admin notification of an open ticket."""
    return {
        "inline_keyboard": [
            [
                {"text": "Reply", "callback_data": f"sup:reply:{ticket.pk}"},
                {"text": "Resolve", "callback_data": f"sup:resolve:{ticket.pk}"},
            ]
        ]
    }


def link_admin_message(ticket: Ticket, sent: dict[str, Any]) -> None:
    """Make a bot message in an admin's chat (a prompt, an acknowledgement) point at the
    ticket, so that replying to it answers the ticket."""
    services.bot_message_link(
        ticket_id=ticket.pk,
        entry=None,
        chat_id=sent["chat"]["id"],
        message_id=sent["message_id"],
        audience=TicketBotMessage.Audience.ADMIN,
    )


def clip(text: str, limit: int = MESSAGE_LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- to the user -----------------------------------------------------------------------------
def _user_notice_due(entry: TicketMessage) -> bool:
    # Every entry has its message for the user: the confirmation of their own message, the
    # answer from support, or the notice of a status change. A failed one is not sent from
    # here again: the support.deliver job retries transient failures, the admin site offers
    # "Retry delivery".
    return entry.user_notified_at is None and not entry.delivery_error


def redeliver(entry: TicketMessage, *, final: bool, client: TelegramClient | None = None) -> None:
    """One automatic retry of a transient failure (the ``support.deliver`` job).

    A failure is recorded on the entry and raised again: the job's retry policy decides
    whether to wait and retry (429, 5xx, network) or to give up (bot blocked, the ``final``
    attempt), and a job that gives up is reported to the admins by the core.
    """
    if entry.user_notified_at is not None:
        return
    client = client or get_client()
    ticket = entry.ticket
    try:
        sent = _send_user_message(client, ticket, entry)
    except TelegramApiError as exc:
        why = _why(exc, delivery_failed(ticket.chat_id, f"support #{ticket.number}", exc))
        if exc.retryable:
            why += " (gave up retrying)" if final else RETRYING
        services.entry_delivery_failed(entry=entry, error=why)
        raise
    services.entry_user_notified(entry=entry, chat_id=ticket.chat_id, message_id=sent)


def _send_to_user(client: TelegramClient, ticket: Ticket, entry: TicketMessage) -> Delivery:
    try:
        sent = _send_user_message(client, ticket, entry)
    except TelegramApiError as exc:
        why = _why(exc, delivery_failed(ticket.chat_id, f"support #{ticket.number}", exc))
        if exc.retryable:  # 429, 5xx, network: the job tries again with backoff
            services.entry_delivery_failed(entry=entry, error=why + RETRYING)
            _schedule_retry(entry, exc)
            return Delivery(False, why, retrying=True)
        services.entry_delivery_failed(entry=entry, error=why)
        return Delivery(False, why)
    services.entry_user_notified(entry=entry, chat_id=ticket.chat_id, message_id=sent)
    return Delivery(True)


def _schedule_retry(entry: TicketMessage, exc: TelegramApiError) -> None:
    wait = max(float(settings.JOB_RETRY_BASE_DELAY), float(exc.retry_after or 0))
    job_enqueue(
        RETRY_JOB,
        {"entry_id": entry.pk},
        run_at=timezone.now() + timedelta(seconds=wait),
        dedupe_key=f"{RETRY_JOB}:{entry.pk}",
    )


def _send_user_message(client: TelegramClient, ticket: Ticket, entry: TicketMessage) -> int:
    """Send the user's copy of ``entry``; return the message id in their chat."""
    chat = ticket.chat_id
    if entry.sender == TicketMessage.Sender.ADMIN and entry.kind != TicketMessage.Kind.EVENT:
        return _send_answer(client, ticket, entry)
    text = _user_notice(ticket, entry)
    return int(client.send_message(chat_id=chat, text=text)["message_id"])


def _send_answer(client: TelegramClient, ticket: Ticket, entry: TicketMessage) -> int:
    """An answer from support, marked with the ticket number; files are sent by file id."""
    mark = f"Support · ticket #{ticket.number}"
    chat = ticket.chat_id
    if entry.kind == TicketMessage.Kind.TEXT:
        return int(
            client.send_message(chat_id=chat, text=clip(f"{mark}\n\n{entry.text}"))["message_id"]
        )
    caption = clip(f"{mark}\n\n{entry.text}" if entry.text else mark, CAPTION_LIMIT)
    return int(_send_file(client, entry, chat_id=chat, caption=caption)["message_id"])


def _send_file(client: TelegramClient, entry: TicketMessage, **params: Any) -> dict[str, Any]:
    """sendPhoto / sendDocument / sendVoice with the entry's file id (the client has a typed
    helper for photos only; the others go through the same ``call``)."""
    params[entry.kind] = entry.file_id
    sent: dict[str, Any] = client.call(FILE_METHODS[entry.kind], **params)
    return sent


def _user_notice(ticket: Ticket, entry: TicketMessage) -> str:
    number = ticket.number
    days = reopen_window().days
    if entry.event == Event.CLOSED_BY_USER:
        return (
            f"Ticket #{number} is closed. To reopen it within {days} days, reply to this message."
        )
    if entry.event == Event.RESOLVED:
        return (
            f"Ticket #{number} was resolved by support. Not solved? Reply to this message within "
            f"{days} days to reopen it."
        )
    if entry.event == Event.REOPENED_BY_ADMIN:
        return f"Support reopened ticket #{number}. Reply to this message to add to it."
    if entry.event == Event.REOPENED_BY_USER:
        return f"Ticket #{number} is open again; support has your message."
    if entry.update_id is not None and entry.update_id == ticket.opened_update_id:
        return (
            f"Ticket #{number} opened. Support will answer here.\n"
            "Messages you send now are added to it; /close closes it."
        )
    return f"Added to ticket #{number}."


def _why(exc: TelegramApiError, description: str) -> str:
    if exc.chat_unreachable:
        return f"the user blocked the bot or is unreachable ({description})"
    return description


# --- to the admins ---------------------------------------------------------------------------
def _admin_notice_due(entry: TicketMessage) -> bool:
    # The user's messages and the user closing a ticket; support's own actions are not echoed.
    return entry.admins_notified_at is None and entry.sender == TicketMessage.Sender.USER


def _notify_admins(client: TelegramClient, ticket: Ticket, entry: TicketMessage) -> None:
    text, markup = _admin_notice(ticket, entry)
    report = notify_admins(
        text, purpose=f"support #{ticket.number}", reply_markup=markup, client=client
    )
    messages = [(admin, int(sent["message_id"])) for admin, sent in report.sent.items()]
    if entry.file_id:
        messages += _send_file_to_admins(client, ticket, entry, report.sent, markup)
    services.entry_admins_notified(entry=entry, messages=messages)


def _admin_notice(ticket: Ticket, entry: TicketMessage) -> tuple[str, dict[str, Any] | None]:
    who = f"{ticket.user_name or 'user'} (id {ticket.user_id})"
    number = ticket.number
    if entry.event == Event.CLOSED_BY_USER:
        return f"Ticket #{number} was closed by {who}.", None
    if entry.update_id is not None and entry.update_id == ticket.opened_update_id:
        head = f"New ticket #{number} from {who}:"
    elif entry.event == Event.REOPENED_BY_USER:
        head = f"Ticket #{number} reopened by {who}:"
    else:
        head = f"Ticket #{number}, new message from {who}:"
    body = _entry_summary(entry)
    tail = "\n\nReply to this message, or press Reply, to answer."
    room = MESSAGE_LIMIT - len(head) - len(tail) - 1
    return f"{head}\n{clip(body, room)}{tail}", buttons(ticket)


def _send_file_to_admins(
    client: TelegramClient,
    ticket: Ticket,
    entry: TicketMessage,
    notified: dict[int, dict[str, Any]],
    markup: dict[str, Any] | None,
) -> list[tuple[int, int]]:
    """The user's file, to each admin who got the notification (one failing admin never stops
    the others), as a reply to that notification."""
    sent_ids: list[tuple[int, int]] = []
    caption = clip(
        f"Ticket #{ticket.number}: {entry.text}" if entry.text else f"Ticket #{ticket.number}",
        CAPTION_LIMIT,
    )
    for admin_id, notice in notified.items():
        try:
            sent = _send_file(
                client,
                entry,
                chat_id=admin_id,
                caption=caption,
                reply_markup=markup,
                reply_parameters={
                    "message_id": notice["message_id"],
                    "allow_sending_without_reply": True,
                },
            )
        except TelegramApiError as exc:
            delivery_failed(admin_id, f"support #{ticket.number} file", exc)
            continue
        sent_ids.append((admin_id, int(sent["message_id"])))
    return sent_ids


def _entry_summary(entry: TicketMessage) -> str:
    if entry.kind == TicketMessage.Kind.TEXT:
        return entry.text
    label = f"[{entry.kind}{': ' + entry.file_name if entry.file_name else ''}]"
    return f"{label} {entry.text}".strip()
