"""The support desk's delivery: every message the bot sends for a ticket, and its bookkeeping.

``deliver(entry)`` does whatever is still pending for a conversation entry (confirm to the
user, notify the admins, send an answer to the user) and records it on the entry's row, so
running it again for the same entry (a re-delivered update) sends nothing twice. The tickets
service (``services``) calls it after each write has committed. Admin notifications go through
the core's isolated ``notify_admins``: a transient failure is retried by the core's job, and a
notice that arrives late is linked to the ticket (and followed by the user's file) by the
``support.admin_notice_sent`` job.

The message to the user is sent at most once automatically:

1. Claim: a conditional UPDATE (``entry_delivery_claim``) gives the send to exactly
   one of the senders of an entry (the update's handler, a re-delivery of it, the
   support.deliver job, the admin site's Retry button), with a deadline after which an
   attempt that never came back is presumed dead.
2. Send, outside any transaction.
3. Record (``telegram_bot.delivery.send_once`` tells which): delivered; or, when Telegram
   answered that it did not send it (or the request never left: connection refused), the
   claim is released with the error, and a transient error (429, 5xx, a refused connection)
   is retried by the support.deliver job (``job_retry_later``); or, when the
   outcome is unknown (a read timeout, a dropped connection, a proxy's 502/504, an attempt
   that died), the entry is marked ``delivery_uncertain``: the Bot API has no idempotency key
   and no way to ask whether the message arrived, so it is never sent again automatically (a
   second copy of an answer is worse than a late one). The admin is told and decides with
   "Retry delivery".
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone, translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from support import selectors, staff
from support.conf import reopen_window
from support.errors import DeliveryInProgressError
from support.models import Ticket, TicketBotMessage, TicketMessage
from telegram_bot.bot import get_client
from telegram_bot.client import CAPTION_LIMIT, SEND_WINDOW_SECONDS, TEXT_LIMIT, TelegramClient, clip
from telegram_bot.delivery import send_once
from telegram_bot.errors import StateError, TelegramApiError
from telegram_bot.jobs.services import job_retry_later
from telegram_bot.languages import default_language, recipient_language
from telegram_bot.notifications import FollowUp, delivery_failed, notify_admins
from telegram_bot.privacy import ANONYMOUS_BASE
from telegram_bot.redaction import redact
from telegram_bot.state import get_store

log = logging.getLogger(__name__)
FILE_METHODS = {
    "photo": "sendPhoto",
    "document": "sendDocument",
    "voice": "sendVoice",
    "video_note": "sendVideoNote",
    "video": "sendVideo",
    "sticker": "sendSticker",
}
# Methods without a caption parameter: the file goes without the ticket mark.
NO_CAPTION = {"sendVideoNote", "sendSticker"}
# How long an answer waits for an earlier answer of its ticket that another process is
# sending, so that the user gets a ticket's answers in the order they were written.
ORDER_WAIT_SECONDS = 10.0
# What the Bot API lets a bot download (getFile); a bigger file is still copied by id.
DOWNLOAD_LIMIT_BYTES = 20 * 1024 * 1024
RETRY_JOB = "support.deliver"
# Queued by the core when an admin's notice of an entry arrived late (its retry job).
ADMIN_NOTICE_SENT_JOB = "support.admin_notice_sent"
# Ends the delivery error of a transient failure that the support.deliver job retries.
RETRYING = "; retrying automatically"
UNCERTAIN = "delivery uncertain"
Event = TicketMessage.Event


@dataclass(frozen=True)
class Delivery:
    """What happened to the message meant for the user (``None``: nothing was due)."""

    delivered: bool | None
    error: str = ""
    retrying: bool = False  # a transient failure: the support.deliver job tries again
    uncertain: bool = False  # it may have arrived: not sent again unless an admin says so
    in_progress: bool = False  # another attempt is sending it right now


def deliver(entry: TicketMessage, *, client: TelegramClient | None = None) -> Delivery:
    """Send what is still pending for ``entry`` and record it."""
    client = client or get_client()
    ticket = entry.ticket
    result = Delivery(None)
    if _user_notice_due(entry):
        if _is_answer(entry):
            _earlier_answers_first(client, ticket, entry)
        result = _send_to_user(client, ticket, entry)
    # The staff group (read here, not through a call: the private flow's walk stays short).
    if (
        entry.admins_notified_at is None
        and settings.SUPPORT_STAFF_CHAT_ID is not None
        and ticket.topic_failed_at is None
        and staff.to_topic(client, ticket, entry)
    ):
        return result
    if _admin_notice_due(entry):
        _notify_admins(client, ticket, entry)
    return result


def _is_answer(entry: TicketMessage) -> bool:
    return entry.sender == TicketMessage.Sender.ADMIN and entry.kind != TicketMessage.Kind.EVENT


def _earlier_answers_first(client: TelegramClient, ticket: Ticket, entry: TicketMessage) -> None:
    """Two staff members answering at once: each answer is sent once, and the user gets them
    in the order they were recorded. Earlier answers still pending are sent first (each by
    its own claim); one that another process is sending is waited for, up to a bound."""
    deadline = time.monotonic() + ORDER_WAIT_SECONDS
    while True:
        earlier = list(
            TicketMessage.objects.select_related("ticket")
            .filter(
                ticket=ticket,
                pk__lt=entry.pk,
                sender=TicketMessage.Sender.ADMIN,
                internal=False,
                user_notified_at__isnull=True,
                delivery_uncertain=False,
                delivery_error="",
            )
            .exclude(kind=TicketMessage.Kind.EVENT)
            .order_by("pk")
        )
        busy = False
        for other in earlier:
            if other.delivery_attempt_token is not None:  # another process is sending it
                deadline_of = other.delivery_attempt_deadline
                busy = busy or (deadline_of is not None and deadline_of > timezone.now())
                continue
            _send_to_user(client, ticket, other)
        if not busy or time.monotonic() > deadline:
            return
        time.sleep(0.05)


def retry(entry: TicketMessage) -> Delivery:
    """An admin's "Retry delivery": send the user an entry whose delivery failed, or whose
    outcome is uncertain (the admin decided it did not arrive). Never while another attempt
    is sending it: the claim lets only one of them send."""
    entry_delivery_retry(entry=entry)
    entry.refresh_from_db()
    return deliver(entry)


def report(ticket: Ticket, result: Delivery) -> str:
    """What the admin who answered in Telegram is told."""
    if result.in_progress:
        return _("The message to the user of ticket #%(number)s is being sent right now.") % {
            "number": ticket.number
        }
    if result.uncertain:
        return _(
            "Delivery to the user of ticket #%(number)s is uncertain: %(error)s. "
            "It may have arrived, so it is not sent again automatically: check with the "
            "user, and use Retry delivery on the ticket in the admin site if it did not "
            "arrive."
        ) % {"number": ticket.number, "error": result.error}
    if result.delivered is False and result.retrying:
        return _(
            "Not delivered to the user of ticket #%(number)s yet: %(error)s. "
            "It is retried automatically."
        ) % {"number": ticket.number, "error": result.error}
    if result.delivered is False:
        return _(
            "Not delivered to the user of ticket #%(number)s: %(error)s. It is saved in the ticket."
        ) % {"number": ticket.number, "error": result.error}
    return _("Sent to the user of ticket #%(number)s.") % {"number": ticket.number}


def buttons(ticket: Ticket) -> dict[str, Any]:
    """Reply and Resolve, under every admin notification of an open ticket."""
    return {
        "inline_keyboard": [
            [
                {"text": gettext_lazy("Reply"), "callback_data": f"sup:reply:{ticket.pk}"},
                {"text": gettext_lazy("Resolve"), "callback_data": f"sup:resolve:{ticket.pk}"},
            ]
        ]
    }


def link_admin_message(ticket: Ticket, sent: dict[str, Any]) -> None:
    """Make a bot message in an admin's chat (a prompt, an acknowledgement) point at the
    ticket, so that replying to it answers the ticket."""
    bot_message_link(
        ticket_id=ticket.pk,
        entry=None,
        chat_id=sent["chat"]["id"],
        message_id=sent["message_id"],
        audience=TicketBotMessage.Audience.ADMIN,
    )


# --- to the user -----------------------------------------------------------------------------
def _user_notice_due(entry: TicketMessage) -> bool:
    # Every entry has its message for the user: the confirmation of their own message, the
    # answer from support, or the notice of a status change. Whether this call may send it is
    # the claim's decision: a failed or uncertain one is not sent from here again (the
    # support.deliver job retries transient failures, the admin site offers "Retry
    # delivery"), and one that another attempt is sending is reported as in progress. An
    # erased user's ticket (its chat an anonymous id) sends them nothing. A staff note is
    # never sent.
    return (
        entry.user_notified_at is None
        and not entry.internal
        and entry.ticket.chat_id < ANONYMOUS_BASE
    )


def redeliver(entry: TicketMessage, *, final: bool, client: TelegramClient | None = None) -> None:
    """One automatic retry of a transient failure (the ``support.deliver`` job).

    A failure Telegram answered is recorded on the entry and raised again: the job's retry
    policy decides whether to wait and retry (429, 5xx, network) or to give up (bot blocked,
    the ``final`` attempt), and a job that gives up is reported to the admins by the core. A
    send whose outcome is unknown is not retried: it is marked uncertain and the admins are
    told. Another attempt in flight (the Retry button) makes the job come back after its
    deadline.
    """
    if entry.user_notified_at is not None:
        return
    client = client or get_client()
    ticket = entry.ticket
    if ticket.chat_id >= ANONYMOUS_BASE:
        return  # its user was erased: there is nobody to send it to
    attempt = _attempt(client, ticket, entry, after_failure=True, final=final)
    if attempt.state == _BUSY:
        raise DeliveryInProgressError(
            f"entry {entry.pk} is being sent by another attempt", retry_after=attempt.wait + 1
        )
    if attempt.state == _UNCERTAIN and entry.sender == TicketMessage.Sender.ADMIN:
        _tell_admins_uncertain(client, ticket, entry, attempt.error)
    if attempt.state == _FAILED and attempt.exc is not None and attempt.recorded:
        raise attempt.exc  # the job's policy: retry (429, 5xx, network) or give up


def _send_to_user(client: TelegramClient, ticket: Ticket, entry: TicketMessage) -> Delivery:
    attempt = _attempt(client, ticket, entry, after_failure=False, final=False)
    if attempt.state == _SENT:
        return Delivery(True)
    if attempt.state == _UNCERTAIN:
        return Delivery(False, attempt.error, uncertain=True)
    if attempt.state == _BUSY:
        # Should that attempt have died, the job finds it presumed dead after its deadline.
        _schedule_retry(entry, error=None, wait=attempt.wait + 1)
        return Delivery(None, in_progress=True)
    if attempt.state == _FAILED and attempt.exc is not None:
        exc = attempt.exc
        if exc.retryable and attempt.recorded:  # 429, 5xx, network: the job tries again
            _schedule_retry(entry, error=exc)
            return Delivery(False, attempt.error, retrying=True)
        return Delivery(False, attempt.error)
    return Delivery(None)  # delivered, or given up, by another attempt


_SENT, _FAILED, _UNCERTAIN, _BUSY, _NOTHING = "sent", "failed", "uncertain", "busy", "nothing"


@dataclass(frozen=True)
class _Attempt:
    state: str
    error: str = ""
    exc: TelegramApiError | None = None
    recorded: bool = True  # the failure was recorded by this attempt (it still owned the entry)
    wait: float = 0.0  # busy: seconds until the other attempt's deadline


def _attempt(
    client: TelegramClient,
    ticket: Ticket,
    entry: TicketMessage,
    *,
    after_failure: bool,
    final: bool,
) -> _Attempt:
    """Claim, send once and record the user's message of ``entry`` (``send_once``)."""
    # Read before the claim (inside the send a failure would count as "may have arrived" and
    # stop every retry); a KV store that fails here gives the default language, not a failure.
    try:
        language = recipient_language(get_store(), user_id=ticket.user_id)
    except StateError as exc:
        log.warning(
            "support #%s: the user's language is unknown (%s)", ticket.number, redact(str(exc))
        )
        language = default_language()
    now = timezone.now()
    token = entry_delivery_claim(
        entry_id=entry.pk,
        deadline=now + timedelta(seconds=SEND_WINDOW_SECONDS),
        after_failure=after_failure,
    )
    if token is None:
        return _not_claimed(entry, now)
    purpose = f"support #{ticket.number}"

    def sent(message_id: int) -> _Attempt:
        entry_user_notified(entry=entry, chat_id=ticket.chat_id, message_id=message_id)
        return _Attempt(_SENT)

    def refused(exc: TelegramApiError) -> _Attempt:
        why = _why(exc, delivery_failed(ticket.chat_id, purpose, exc))
        suffix = ""
        if exc.retryable:
            suffix = " (gave up retrying)" if final else RETRYING
        # The suffix survives the column's 500 characters: the retry job claims only an entry
        # whose error ends with RETRYING (a long 5xx text cut it off, and nothing retried).
        error = why[: 500 - len(suffix)] + suffix
        recorded = entry_delivery_failed(entry=entry, error=error, token=token)
        return _Attempt(_FAILED, why, exc, recorded=recorded)

    def unknown(why: str, exc: BaseException) -> _Attempt:
        if isinstance(exc, TelegramApiError):
            why = _why(exc, delivery_failed(ticket.chat_id, purpose, exc))
        entry_delivery_uncertain(entry=entry, error=_uncertain(why), token=token)
        log.warning("support #%s entry %s: %s (%s)", ticket.number, entry.pk, UNCERTAIN, why)
        return _Attempt(_UNCERTAIN, why, exc if isinstance(exc, TelegramApiError) else None)

    return send_once(
        lambda: _send_user_message(client, ticket, entry, language),
        sent=sent,
        refused=refused,
        unknown=unknown,
    )


def _not_claimed(entry: TicketMessage, now: datetime) -> _Attempt:
    """Someone else has the send: delivered, uncertain, failed, in flight, or presumed dead."""
    row = TicketMessage.objects.filter(pk=entry.pk).first()
    if row is None or row.user_notified_at is not None or row.delivery_uncertain:
        return _Attempt(_NOTHING)
    token, deadline = row.delivery_attempt_token, row.delivery_attempt_deadline
    if token is None:
        return _Attempt(_NOTHING)  # it failed before: only the job or an admin sends it again
    if deadline is not None and deadline > now:
        return _Attempt(_BUSY, wait=(deadline - now).total_seconds())
    # That attempt never came back (its process died, or it is stuck past every timeout):
    # whether its message arrived is unknown.
    why = "the attempt to send it did not finish"
    if entry_delivery_uncertain(entry=row, error=_uncertain(why), token=token):
        return _Attempt(_UNCERTAIN, why)
    return _Attempt(_NOTHING)


def settle_stale(ticket: Ticket) -> None:
    """Mark the ticket's sends whose attempt never came back as uncertain, so that the admin
    site shows them with "Retry delivery" instead of "sending" for ever."""
    now = timezone.now()
    for entry in selectors.stale_deliveries(ticket):
        _not_claimed(entry, now)


def _uncertain(why: str) -> str:
    return (
        f"{UNCERTAIN} ({why[:300]}): it may have reached the user, so it is not sent again "
        "automatically"
    )


def _tell_admins_uncertain(
    client: TelegramClient, ticket: Ticket, entry: TicketMessage, why: str
) -> None:
    def text() -> str:
        if entry.kind != TicketMessage.Kind.EVENT:
            head = _("Ticket #%(number)s: the answer to the user may or may not have arrived")
        else:
            head = _("Ticket #%(number)s: the notice to the user may or may not have arrived")
        return clip(
            head % {"number": ticket.number}
            + f" ({why}). "
            + _(
                "It is not sent again automatically: check with the user, and use Retry "
                "delivery on the ticket in the admin site if it did not arrive."
            )
        )

    notify_admins(text, purpose=f"support #{ticket.number} uncertain", client=client)


def _schedule_retry(
    entry: TicketMessage, *, error: TelegramApiError | None, wait: float = 0
) -> None:
    """The support.deliver job sends it again on the core retry policy."""
    job_retry_later(
        RETRY_JOB,
        {"entry_id": entry.pk},
        dedupe_key=f"{RETRY_JOB}:{entry.pk}",
        error=error,
        not_before=wait,
    )


def _send_user_message(
    client: TelegramClient, ticket: Ticket, entry: TicketMessage, language: str
) -> int:
    """Send the user's copy of ``entry`` in ``language``; return the message id in their chat."""
    chat = ticket.chat_id
    # In the user's language, whoever sends it (an admin in Telegram or the admin site, a job).
    with translation.override(language):
        if entry.sender == TicketMessage.Sender.ADMIN and entry.kind != TicketMessage.Kind.EVENT:
            return _send_answer(client, ticket, entry)
        text = _user_notice(ticket, entry) + _too_big_note(entry)
        markup = None
        if entry.event in (Event.CLOSED_BY_USER, Event.RESOLVED):
            markup = rating_buttons(ticket)
        return int(client.send_message(chat_id=chat, text=text, reply_markup=markup)["message_id"])


def rating_buttons(ticket: Ticket) -> dict[str, Any]:
    """Good / bad, under the notice that a ticket was closed."""
    return {
        "inline_keyboard": [
            [
                {"text": "👍 " + _("Good"), "callback_data": f"sup:rate:{ticket.pk}:good"},
                {"text": "👎 " + _("Bad"), "callback_data": f"sup:rate:{ticket.pk}:bad"},
            ]
        ]
    }


def _send_answer(client: TelegramClient, ticket: Ticket, entry: TicketMessage) -> int:
    """An answer from support, marked with the ticket number; files are sent by file id."""
    mark = _("Support · ticket #%(number)s") % {"number": ticket.number}
    chat = ticket.chat_id
    if entry.kind == TicketMessage.Kind.TEXT:
        return int(
            client.send_message(chat_id=chat, text=clip(f"{mark}\n\n{entry.text}"))["message_id"]
        )
    caption = clip(f"{mark}\n\n{entry.text}" if entry.text else mark, CAPTION_LIMIT)
    staff_chat = staff.staff_chat_id()
    if staff_chat is not None and entry.source_chat_id == staff_chat and entry.source_message_id:
        # Written in the staff group: copied as it is (copyMessage, nothing re-uploaded).
        params: dict[str, Any] = {}
        if FILE_METHODS.get(entry.kind) not in NO_CAPTION:
            params["caption"] = caption
        copied = client.copy_message(
            chat_id=chat,
            from_chat_id=staff_chat,
            message_id=entry.source_message_id,
            **params,
        )
        return int(copied["message_id"])
    return int(_send_file(client, entry, chat_id=chat, caption=caption)["message_id"])


def _send_file(client: TelegramClient, entry: TicketMessage, **params: Any) -> dict[str, Any]:
    """sendPhoto / sendDocument / sendVoice / sendVideoNote with the entry's file id (the
    client has a typed helper for photos only; the others go through the same ``call``)."""
    params[entry.kind] = entry.file_id
    if FILE_METHODS[entry.kind] in NO_CAPTION:
        params.pop("caption", None)
    sent: dict[str, Any] = client.call(FILE_METHODS[entry.kind], **params)
    return sent


def _user_notice(ticket: Ticket, entry: TicketMessage) -> str:
    number = ticket.number
    if entry.event == Event.CLOSED_BY_USER:
        days = reopen_window().days
        return ngettext(
            "Ticket #%(number)s is closed. To reopen it within %(count)d day, reply to this "
            "message.",
            "Ticket #%(number)s is closed. To reopen it within %(count)d days, reply to this "
            "message.",
            days,
        ) % {"number": number, "count": days}
    if entry.event == Event.RESOLVED:
        days = reopen_window().days
        return ngettext(
            "Ticket #%(number)s was resolved by support. Not solved? Reply to this message "
            "within %(count)d day to reopen it.",
            "Ticket #%(number)s was resolved by support. Not solved? Reply to this message "
            "within %(count)d days to reopen it.",
            days,
        ) % {"number": number, "count": days}
    if entry.event == Event.REOPENED_BY_ADMIN:
        return _("Support reopened ticket #%(number)s. Reply to this message to add to it.") % {
            "number": number
        }
    if entry.event == Event.REOPENED_BY_USER:
        return _("Ticket #%(number)s is open again; support has your message.") % {"number": number}
    if entry.update_id is not None and entry.update_id == ticket.opened_update_id:
        return _(
            "Ticket #%(number)s opened. Support will answer here.\n"
            "Messages you send now are added to it; /close closes it."
        ) % {"number": number}
    return _("Added to ticket #%(number)s.") % {"number": number}


def _too_big_note(entry: TicketMessage) -> str:
    """Told to a user whose file is over what a bot may download."""
    if entry.file_size is None or entry.file_size <= DOWNLOAD_LIMIT_BYTES:
        return ""
    return "\n" + _(
        "Your file is over 20 MB, the most a bot may download: support sees it in Telegram, "
        "but the web review cannot show it. If it matters, send a smaller file or a link."
    )


def _why(exc: TelegramApiError, description: str) -> str:
    if exc.chat_unreachable:
        return _("the user blocked the bot or is unreachable (%(error)s)") % {"error": description}
    return description


# --- to the admins ---------------------------------------------------------------------------
def _admin_notice_due(entry: TicketMessage) -> bool:
    # The user's messages and the user closing a ticket; support's own actions are not echoed.
    return entry.admins_notified_at is None and entry.sender == TicketMessage.Sender.USER


def _notify_admins(client: TelegramClient, ticket: Ticket, entry: TicketMessage) -> None:
    markup = buttons(ticket)
    report = notify_admins(
        lambda: _admin_notice(ticket, entry)[0],  # in each admin's language
        purpose=f"support #{ticket.number}",
        reply_markup=markup,
        client=client,
        on_sent=FollowUp(ADMIN_NOTICE_SENT_JOB, {"entry_id": entry.pk}),
        # Claimed on the row right before the first send (a failure reading the admins
        # claims nothing): a run that finds it claimed and not recorded does not send again.
        claim=lambda: entry_admins_notice_claim(entry=entry),
    )
    if report.claimed_elsewhere:
        # Another run is sending it, or one stopped between sending and recording (the
        # admins may have it): taken as done (a run in flight records its messages itself).
        log.warning(
            "support #%s entry %s: the admins' notice was claimed before; not sent again",
            ticket.number,
            entry.pk,
        )
        entry_admins_notified(entry=entry, messages=[])
        return
    messages = [(admin, int(sent["message_id"])) for admin, sent in report.sent.items()]
    if entry.file_id:
        messages += _send_file_to_admins(client, ticket, entry, report.sent, markup)
    entry_admins_notified(entry=entry, messages=messages)


def admin_notice_arrived(
    *, entry_id: int, chat_id: int, message_id: int, client: TelegramClient | None = None
) -> None:
    """A notice the core's retry job delivered late to one admin: link it to the ticket (so a
    reply to it answers the ticket) and send that admin the user's file, as the others got it
    with their notice."""
    entry = TicketMessage.objects.select_related("ticket").filter(pk=entry_id).first()
    if entry is None:
        return  # the ticket was deleted meanwhile
    ticket = entry.ticket
    messages = [(chat_id, message_id)]
    if entry.file_id:
        client = client or get_client()
        _, markup = _admin_notice(ticket, entry)
        notice = {chat_id: {"message_id": message_id}}
        messages += _send_file_to_admins(client, ticket, entry, notice, markup)
    _link_admin_copies(entry, messages)


def _admin_notice(ticket: Ticket, entry: TicketMessage) -> tuple[str, dict[str, Any] | None]:
    who = f"{ticket.user_name or _('user')} (id {ticket.user_id})"
    number = ticket.number
    if entry.event == Event.CLOSED_BY_USER:
        return _("Ticket #%(number)s was closed by %(who)s.") % {"number": number, "who": who}, None
    if entry.update_id is not None and entry.update_id == ticket.opened_update_id:
        head = _("New ticket #%(number)s from %(who)s:") % {"number": number, "who": who}
    elif entry.event == Event.REOPENED_BY_USER:
        head = _("Ticket #%(number)s reopened by %(who)s:") % {"number": number, "who": who}
    else:
        head = _("Ticket #%(number)s, new message from %(who)s:") % {"number": number, "who": who}
    body = _entry_summary(entry)
    tail = "\n\n" + _("Reply to this message, or press Reply, to answer.")
    room = TEXT_LIMIT - len(head) - len(tail) - 1
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
        _("Ticket #%(number)s: %(text)s") % {"number": ticket.number, "text": entry.text}
        if entry.text
        else _("Ticket #%(number)s") % {"number": ticket.number},
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


# --- delivery bookkeeping --------------------------------------------------------------------
def entry_delivery_claim(
    *, entry_id: int, deadline: datetime, after_failure: bool
) -> uuid.UUID | None:
    """Claim the send of ``entry_id``'s message to the user; return the attempt token, or None
    if another sender has it (delivered, in flight, or uncertain).

    One conditional UPDATE: whoever changes the row owns the send, so two concurrent senders
    (the support.deliver job and the admin site's Retry button, say) never both send.
    ``after_failure`` (the support.deliver job) also allows an entry whose last attempt failed
    transiently (its error ends with ``RETRYING``); without it only an entry with no recorded
    failure is claimed. A permanent failure is sent again only after an admin's Retry.
    """
    token = uuid.uuid4()
    unclaimed = TicketMessage.objects.filter(
        pk=entry_id,
        user_notified_at__isnull=True,
        delivery_attempt_token__isnull=True,
        delivery_uncertain=False,
    )
    if after_failure:
        unclaimed = unclaimed.filter(Q(delivery_error="") | Q(delivery_error__endswith=RETRYING))
    else:
        unclaimed = unclaimed.filter(delivery_error="")
    claimed = unclaimed.update(delivery_attempt_token=token, delivery_attempt_deadline=deadline)
    return token if claimed else None


@transaction.atomic
def entry_user_notified(*, entry: TicketMessage, chat_id: int, message_id: int) -> None:
    """The user's chat got the bot message for ``entry``; replying to it addresses the ticket.

    Not fenced on the attempt token: a message that arrived is a fact, even when its attempt
    was presumed dead (or marked uncertain) meanwhile.
    """
    TicketMessage.objects.filter(pk=entry.pk).update(
        user_notified_at=timezone.now(),
        delivery_error="",
        delivery_uncertain=False,
        delivery_attempt_token=None,
        delivery_attempt_deadline=None,
    )
    bot_message_link(
        ticket_id=entry.ticket_id,
        entry=entry,
        chat_id=chat_id,
        message_id=message_id,
        audience=TicketBotMessage.Audience.USER,
    )


def entry_delivery_failed(*, entry: TicketMessage, error: str, token: uuid.UUID) -> bool:
    """The attempt ``token`` got an answer saying the message was not sent: release the claim
    (the job, or an admin, may try again). False if the attempt no longer owned the entry."""
    return bool(
        TicketMessage.objects.filter(
            pk=entry.pk, delivery_attempt_token=token, user_notified_at__isnull=True
        ).update(
            delivery_error=error[:500] or "failed",
            delivery_attempt_token=None,
            delivery_attempt_deadline=None,
        )
    )


def entry_delivery_uncertain(*, entry: TicketMessage, error: str, token: uuid.UUID) -> bool:
    """The attempt ``token`` ended without knowing whether the message arrived: mark it so
    that nothing sends it again automatically. False if the attempt no longer owned it."""
    return bool(
        TicketMessage.objects.filter(
            pk=entry.pk,
            delivery_attempt_token=token,
            user_notified_at__isnull=True,
            delivery_uncertain=False,
        ).update(delivery_error=error[:500] or "outcome unknown", delivery_uncertain=True)
    )


def entry_delivery_retry(*, entry: TicketMessage) -> None:
    """An admin asks to send it again: forget a failed or uncertain attempt (never one that is
    still in flight).

    The UPDATE filters on the entry's own columns only: a filter across the ticket made it
    ``WHERE id IN (SELECT ...)``, which PostgreSQL judges on the row as the statement first
    saw it, so a reset that waited for a concurrent claim dropped that claim once committed,
    and the answer went out twice."""
    if not Ticket.objects.filter(pk=entry.ticket_id, chat_id__lt=ANONYMOUS_BASE).exists():
        return  # its user was erased: there is nobody to send it to
    TicketMessage.objects.filter(pk=entry.pk, user_notified_at__isnull=True).filter(
        Q(delivery_attempt_token__isnull=True) | Q(delivery_uncertain=True)
    ).update(
        delivery_error="",
        delivery_uncertain=False,
        delivery_attempt_token=None,
        delivery_attempt_deadline=None,
    )


def entry_admins_notice_claim(*, entry: TicketMessage) -> bool:
    """Claim the admins' notice of ``entry`` (one conditional UPDATE): True for the one run
    that may send it."""
    return bool(
        TicketMessage.objects.filter(
            pk=entry.pk, admins_notified_at__isnull=True, admins_notice_claimed_at__isnull=True
        ).update(admins_notice_claimed_at=timezone.now())
    )


@transaction.atomic
def entry_admins_notified(*, entry: TicketMessage, messages: list[tuple[int, int]]) -> None:
    """The admins were notified of ``entry`` with ``messages`` (admin chat, message id)."""
    TicketMessage.objects.filter(pk=entry.pk).update(admins_notified_at=timezone.now())
    _link_admin_copies(entry, messages)


def _link_admin_copies(entry: TicketMessage, messages: list[tuple[int, int]]) -> None:
    """Replying to any of ``messages`` (admin chat, message id) answers ``entry``'s ticket."""
    for chat_id, message_id in messages:
        bot_message_link(
            ticket_id=entry.ticket_id,
            entry=entry,
            chat_id=chat_id,
            message_id=message_id,
            audience=TicketBotMessage.Audience.ADMIN,
        )


def bot_message_link(
    *,
    ticket_id: int,
    entry: TicketMessage | None,
    chat_id: int,
    message_id: int,
    audience: str,
) -> None:
    """Remember that the bot's message ``message_id`` in ``chat_id`` belongs to the ticket.

    A message to the user is linked only while the ticket is still theirs: under the ticket's
    lock, an erasure that finished during the send (it gave the ticket an anonymous chat) is
    seen, and no row ties the person's chat to the erased ticket again."""
    with transaction.atomic():
        if audience == TicketBotMessage.Audience.USER and not (
            Ticket.objects.select_for_update().filter(pk=ticket_id, chat_id=chat_id).exists()
        ):
            return
        TicketBotMessage.objects.get_or_create(
            chat_id=chat_id,
            message_id=message_id,
            defaults={"ticket_id": ticket_id, "entry": entry, "audience": audience},
        )
