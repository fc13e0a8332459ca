"""Writes of the support app. Each takes keyword-only, already validated values.

Idempotency: an entry created by a Telegram update carries ``update_id`` (a form submission
``form_token``) under a unique constraint. The callers look the entry up first
(``selectors.entry_for_update``); a concurrent duplicate that slips past that check fails on
the constraint, the whole transaction rolls back (ticket number included) and the existing
entry is returned instead.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext

from support.errors import TicketClosedError, TicketNotFoundError, TicketOpenError
from support.models import Ticket, TicketBotMessage, TicketCounter, TicketMessage
from support.selectors import reopenable
from support.validation import Content
from telegram_bot.privacy import ANONYMOUS_BASE

SUBJECT_LENGTH = 120
# Ends the delivery error of a transient failure that the support.deliver job retries.
RETRYING = "; retrying automatically"


@dataclass(frozen=True)
class Author:
    """Who wrote an entry: a Telegram user (``telegram_id``) or an operator of the admin site."""

    name: str
    telegram_id: int | None = None

    @property
    def assignee_label(self) -> str:
        return f"tg:{self.telegram_id}" if self.telegram_id is not None else f"site:{self.name}"


@dataclass(frozen=True)
class Origin:
    """Where an entry came from: the update (Telegram) or the form token (admin site)."""

    update_id: int | None = None
    form_token: uuid.UUID | None = None
    chat_id: int | None = None
    message_id: int | None = None


def ticket_open(
    *, bot_id: int, user_id: int, chat_id: int, author: Author, origin: Origin, content: Content
) -> tuple[TicketMessage, bool]:
    """Open a ticket with its first message; return (that entry, created).

    The ticket number comes from the bot's counter row, locked for the rest of the
    transaction: numbers are strictly sequential, and a rolled-back ticket gives its number
    back. A second run for the same update returns the first run's entry.
    """
    update_id = origin.update_id
    if update_id is None:
        raise ValueError("a ticket is opened by a Telegram update")
    TicketCounter.objects.get_or_create(bot_id=bot_id)
    return _once(
        origin,
        lambda: _ticket_create(
            bot_id=bot_id,
            user_id=user_id,
            chat_id=chat_id,
            author=author,
            origin=origin,
            update_id=update_id,
            content=content,
        ),
    )


@transaction.atomic
def _ticket_create(
    *,
    bot_id: int,
    user_id: int,
    chat_id: int,
    author: Author,
    origin: Origin,
    update_id: int,
    content: Content,
) -> TicketMessage:
    counter = TicketCounter.objects.select_for_update().get(bot_id=bot_id)
    counter.last_number += 1
    counter.save(update_fields=["last_number"])
    ticket = Ticket.objects.create(
        bot_id=bot_id,
        number=counter.last_number,
        user_id=user_id,
        chat_id=chat_id,
        user_name=author.name[:200],
        subject=_subject(content),
        opened_update_id=update_id,
    )
    return _entry_create(ticket, TicketMessage.Sender.USER, author, origin, content)


def ticket_add_user_message(
    *, ticket_id: int, author: Author, origin: Origin, content: Content, reopen: bool
) -> tuple[TicketMessage, bool]:
    """Add a user's message to their ticket.

    A closed ticket is reopened when ``reopen`` is set and it was closed within the reopen
    window (the entry is then marked ``reopened_by_user``); otherwise TicketClosedError.
    """
    return _once(
        origin,
        lambda: _user_message_create(
            ticket_id=ticket_id, author=author, origin=origin, content=content, reopen=reopen
        ),
    )


@transaction.atomic
def _user_message_create(
    *, ticket_id: int, author: Author, origin: Origin, content: Content, reopen: bool
) -> TicketMessage:
    ticket = _locked(ticket_id)
    if author.telegram_id is not None and ticket.user_id != author.telegram_id:
        # Not theirs (any more): the user was erased after their ticket was looked up, and
        # the erasure, holding this lock, gave the ticket an anonymous user.
        raise TicketClosedError(
            f"ticket {ticket.pk} is not user {author.telegram_id}'s",
            user_message=gettext("Ticket #%(number)s is closed.") % {"number": ticket.number},
        )
    event = ""
    if not ticket.is_open:
        if not (reopen and reopenable(ticket)):
            raise TicketClosedError(
                f"ticket {ticket.pk} is closed",
                user_message=gettext("Ticket #%(number)s is closed.") % {"number": ticket.number},
            )
        _reopen(ticket)
        event = TicketMessage.Event.REOPENED_BY_USER
    return _entry_create(ticket, TicketMessage.Sender.USER, author, origin, content, event=event)


def ticket_reply(
    *, ticket_id: int, author: Author, origin: Origin, content: Content
) -> tuple[TicketMessage, bool]:
    """Record an answer from support; the first one sets the first-response time and the
    assignee. A closed ticket cannot be answered (TicketClosedError)."""
    return _once(
        origin,
        lambda: _reply_create(ticket_id=ticket_id, author=author, origin=origin, content=content),
    )


@transaction.atomic
def _reply_create(
    *, ticket_id: int, author: Author, origin: Origin, content: Content
) -> TicketMessage:
    ticket = _locked(ticket_id)
    if not ticket.is_open:
        raise TicketClosedError(
            f"ticket {ticket.pk} is closed",
            user_message=gettext("Ticket #%(number)s is closed; reopen it before answering.")
            % {"number": ticket.number},
        )
    changed = []
    if ticket.first_response_at is None:
        ticket.first_response_at = timezone.now()
        changed.append("first_response_at")
    if not ticket.assignee:
        ticket.assignee = author.assignee_label
        changed.append("assignee")
    if changed:
        ticket.save(update_fields=changed)
    return _entry_create(ticket, TicketMessage.Sender.ADMIN, author, origin, content)


def ticket_close(
    *, ticket_id: int, by_user: bool, author: Author, origin: Origin
) -> tuple[TicketMessage, bool]:
    """Close a ticket: by its user (``/close``) or by support (Resolve). Raises
    TicketClosedError if it is closed already."""
    return _once(
        origin,
        lambda: _close(ticket_id=ticket_id, by_user=by_user, author=author, origin=origin),
    )


@transaction.atomic
def _close(*, ticket_id: int, by_user: bool, author: Author, origin: Origin) -> TicketMessage:
    ticket = _locked(ticket_id)
    if not ticket.is_open:
        raise TicketClosedError(
            f"ticket {ticket.pk} is closed already",
            user_message=gettext("Ticket #%(number)s is already closed.")
            % {"number": ticket.number},
        )
    ticket.status = Ticket.Status.CLOSED
    ticket.closed_at = timezone.now()
    ticket.closed_by = Ticket.ClosedBy.USER if by_user else Ticket.ClosedBy.ADMIN
    ticket.save(update_fields=["status", "closed_at", "closed_by"])
    event = TicketMessage.Event.CLOSED_BY_USER if by_user else TicketMessage.Event.RESOLVED
    sender = TicketMessage.Sender.USER if by_user else TicketMessage.Sender.ADMIN
    return _event_create(ticket, sender, author, origin, event)


def ticket_reopen(*, ticket_id: int, author: Author, origin: Origin) -> tuple[TicketMessage, bool]:
    """Reopen a closed ticket from the support side (any time). TicketOpenError if open."""
    return _once(
        origin, lambda: _reopen_by_admin(ticket_id=ticket_id, author=author, origin=origin)
    )


@transaction.atomic
def _reopen_by_admin(*, ticket_id: int, author: Author, origin: Origin) -> TicketMessage:
    ticket = _locked(ticket_id)
    if ticket.is_open:
        raise TicketOpenError(
            f"ticket {ticket.pk} is open",
            user_message=gettext("Ticket #%(number)s is already open.") % {"number": ticket.number},
        )
    _reopen(ticket)
    return _event_create(
        ticket, TicketMessage.Sender.ADMIN, author, origin, TicketMessage.Event.REOPENED_BY_ADMIN
    )


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


# --- helpers ---------------------------------------------------------------------------------
def _once(origin: Origin, create: Callable[[], TicketMessage]) -> tuple[TicketMessage, bool]:
    """Run ``create`` unless ``origin`` already made its entry; return (entry, created)."""
    existing = _existing(origin)
    if existing is not None:
        return existing, False
    try:
        return create(), True
    except IntegrityError:
        # A concurrent run of the same update or form won; its entry is the answer.
        existing = _existing(origin)
        if existing is None:
            raise
        return existing, False


def _existing(origin: Origin) -> TicketMessage | None:
    if origin.update_id is not None:
        found = TicketMessage.objects.filter(update_id=origin.update_id)
    elif origin.form_token is not None:
        found = TicketMessage.objects.filter(form_token=origin.form_token)
    else:
        return None
    return found.select_related("ticket").first()


def _locked(ticket_id: int) -> Ticket:
    """The ticket row, locked until the end of the caller's transaction."""
    ticket = Ticket.objects.select_for_update().filter(pk=ticket_id).first()
    if ticket is None:
        raise TicketNotFoundError(f"no ticket {ticket_id}")
    return ticket


def _reopen(ticket: Ticket) -> None:
    """Call while holding the ticket's row lock."""
    ticket.status = Ticket.Status.OPEN
    ticket.closed_at = None
    ticket.closed_by = ""
    ticket.reopened_count += 1
    ticket.save(update_fields=["status", "closed_at", "closed_by", "reopened_count"])


def _entry_create(
    ticket: Ticket,
    sender: str,
    author: Author,
    origin: Origin,
    content: Content,
    *,
    event: str = "",
) -> TicketMessage:
    return TicketMessage.objects.create(
        ticket=ticket,
        sender=sender,
        kind=content.kind,
        event=event,
        text=content.text,
        file_id=content.file_id,
        file_name=content.file_name,
        author_id=author.telegram_id,
        author_name=author.name[:200],
        update_id=origin.update_id,
        form_token=origin.form_token,
        source_chat_id=origin.chat_id,
        source_message_id=origin.message_id,
    )


def _event_create(
    ticket: Ticket, sender: str, author: Author, origin: Origin, event: str
) -> TicketMessage:
    return TicketMessage.objects.create(
        ticket=ticket,
        sender=sender,
        kind=TicketMessage.Kind.EVENT,
        event=event,
        author_id=author.telegram_id,
        author_name=author.name[:200],
        update_id=origin.update_id,
        form_token=origin.form_token,
        source_chat_id=origin.chat_id,
        source_message_id=origin.message_id,
    )


def _subject(content: Content) -> str:
    line = content.summary.strip().splitlines()[0] if content.summary.strip() else content.kind
    return line if len(line) <= SUBJECT_LENGTH else line[: SUBJECT_LENGTH - 1] + "…"
