"""The tickets service: everything that happens to a support ticket, in one module.

Called by the Telegram handlers (one call per update, which returns what to say) and by the
admin site (``views.py``). A message driven by an update is first checked against what that
update already did: a re-delivery (after a crash or a 503) only finishes the pending
deliveries. Then it is placed: the ``/support`` and Reply workflows, the ticket a reply
addresses, the user's newest open ticket. Each write is one short transaction (``ticket_*``
below); the messages it causes go out after the commit through ``delivery``, outside any
transaction, so that no row lock is held while Telegram answers.

Idempotency: an entry created by a Telegram update carries ``update_id`` (a form submission
``form_token``) under a unique constraint. A concurrent duplicate that slips past the lookup
fails on the constraint, the whole transaction rolls back (ticket number included) and the
existing entry is returned instead.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from support import auditing, conf, delivery, panel, selectors, staff
from support.delivery import Delivery, clip
from support.errors import (
    NotYourTicketError,
    TicketClosedError,
    TicketNotFoundError,
    TicketOpenError,
)
from support.models import Ticket, TicketCounter, TicketMessage
from support.validation import (
    Callback,
    Content,
    check_answer,
    check_callback,
    check_rating,
    check_text,
    parse_ticket_number,
)
from telegram_bot.bot import bot_id
from telegram_bot.errors import BotError, StateUnavailableError, ValidationError
from telegram_bot.state.base import KVStore
from telegram_bot.state.workflows import Workflow, WorkflowKind, WorkflowStore

log = logging.getLogger(__name__)

# The two conversations of the desk (their shapes: version 1, see telegram_bot.state.workflows).
OPEN = WorkflowKind("support_open")  # /support, then the request as one message; no data
REPLY = WorkflowKind("support_reply")  # Reply, then the answer; data: ticket_id, number
SUBJECT_LENGTH = 120
Event = TicketMessage.Event
EVENT = Content(kind=TicketMessage.Kind.EVENT)  # what a status change records: no content
CLOSE_CHOICES = 10
NO_SUCH_TICKET = gettext_lazy("You have no such ticket.")
EXPIRED_REQUEST = gettext_lazy(
    "Your /support request expired. Send /support again to open a ticket."
)
UNREADABLE_REQUEST = gettext_lazy(
    "Your /support request cannot be continued after an update of the bot. Send /support "
    "again to open a ticket."
)


# --- values ----------------------------------------------------------------------------------
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


@dataclass(frozen=True)
class Incoming:
    """An update (a message, a command or a button press), reduced to what the desk uses.
    ``content`` is a plain message's ticket content, or None with ``content_error`` saying
    why; ``args`` a command's arguments; ``is_admin`` is read for plain messages and buttons
    only (commands never need it)."""

    update_id: int
    chat_id: int
    user_id: int
    user_name: str
    message_id: int
    reply_to_message_id: int | None
    content: Content | None
    content_error: str = ""
    args: str = ""
    is_admin: bool = False

    @property
    def author(self) -> Author:
        return Author(name=self.user_name, telegram_id=self.user_id)

    @property
    def origin(self) -> Origin:
        return Origin(update_id=self.update_id, chat_id=self.chat_id, message_id=self.message_id)


@dataclass(frozen=True)
class Say:
    """A message to send in the chat of the update; ``ticket``: the sent message belongs to
    that ticket (an admin may reply to it to answer the ticket)."""

    text: str
    markup: dict[str, Any] | None = None
    ticket: Ticket | None = None


@dataclass(frozen=True)
class Pressed:
    """The answer to a button press: the callback answer, then the pressed message replaced
    by ``view`` or stripped of its buttons, then the messages to send."""

    text: str | None = None
    alert: bool = False
    view: tuple[str, dict[str, Any]] | None = None
    remove_buttons: bool = False
    says: list[Say] = field(default_factory=list)


# --- Telegram: commands ----------------------------------------------------------------------
def support_command(incoming: Incoming, store: KVStore) -> list[Say]:
    """``/support [text]`` in private: open a ticket, or wait for the request's one message."""
    resumed = _resumed(incoming)
    if resumed is not None:
        return resumed
    workflows = WorkflowStore(store, OPEN, REPLY)
    if not incoming.args:
        ttl_ms = conf.open_workflow_ttl_ms()
        workflows.start(
            chat_id=incoming.chat_id,
            user_id=incoming.user_id,
            name=OPEN.name,
            step="message",
            ttl_ms=ttl_ms,
        )
        minutes = max(1, ttl_ms // 60_000)
        return [
            Say(
                ngettext(
                    "Send your request as one message: text, a photo, a document or a voice "
                    "message. I'll wait %(count)d minute.",
                    "Send your request as one message: text, a photo, a document or a voice "
                    "message. I'll wait %(count)d minutes.",
                    minutes,
                )
                % {"count": minutes}
            )
        ]
    try:
        content = check_text(incoming.args)
    except ValidationError as exc:
        return [Say(exc.user_message)]
    _finish(workflows, _workflow(workflows, incoming, OPEN))
    _open(incoming, content)
    return []


def close_command(incoming: Incoming) -> list[Say]:
    """``/close``: the ticket named by number, else the one replied to, else the only open
    one; with several open tickets the user picks one with a button."""
    resumed = _resumed(incoming)
    if resumed is not None:
        return resumed
    if incoming.args:
        number = parse_ticket_number(incoming.args)
        if number is None:
            return [Say(_("Usage: /close, or /close <ticket number> such as /close 12."))]
        ticket = selectors.ticket_by_number(bot_id=bot_id() or 0, number=number)
        if ticket is None or ticket.user_id != incoming.user_id:  # whether it exists or not
            return [Say(_("You have no ticket #%(number)s.") % {"number": number})]
        return _close_by_user(ticket, incoming.author, incoming.origin)
    if incoming.reply_to_message_id is not None:
        replied = selectors.ticket_for_user_reply(
            chat_id=incoming.chat_id,
            user_id=incoming.user_id,
            message_id=incoming.reply_to_message_id,
        )
        if replied is not None:
            return _close_by_user(replied, incoming.author, incoming.origin)
    open_tickets = list(selectors.open_tickets_of(incoming.user_id)[:CLOSE_CHOICES])
    if not open_tickets:
        return [Say(_("You have no open support ticket."))]
    if len(open_tickets) == 1:
        return _close_by_user(open_tickets[0], incoming.author, incoming.origin)
    rows = [
        [
            {
                "text": clip(
                    _("Close #%(number)s: %(subject)s")
                    % {"number": t.number, "subject": t.subject},
                    60,
                ),
                "callback_data": f"sup:close:{t.pk}",
            }
        ]
        for t in open_tickets
    ]
    return [Say(_("Which ticket should be closed?"), {"inline_keyboard": rows})]


# --- Telegram: plain private messages and the workflows --------------------------------------
def private_message(incoming: Incoming) -> list[Say]:
    """A plain private message: a follow-up, a reopening reply, an admin's reply."""
    resumed = _resumed(incoming)
    if resumed is not None:
        return resumed
    return _private_message(incoming)


def open_step(incoming: Incoming, store: KVStore) -> list[Say]:
    """The one message after ``/support``.

    A reply to a message of one of the user's tickets (or, for an admin, to a ticket
    notification) is not the new request: it goes where it points, as it would without the
    workflow, and the workflow ends. An expired workflow says so only for a message that is
    not addressed to a ticket, and even then does not drop a follow-up: with an open ticket the
    message goes to it, as any plain message would. A reply to a ticket that can no longer
    take it (closed beyond the reopen window) is the requested new ticket's first message.
    A workflow of a version this build cannot read is ended, and the user asked to start again.
    """
    waiting = _waiting(incoming, store, OPEN)
    if isinstance(waiting, list):
        return waiting
    workflows, workflow = waiting
    target = _reply_target(incoming, reopenable_only=True)
    if target is not None:
        cancelled = _(
            "Your /support request is cancelled: your message replies to ticket "
            "#%(number)s, so it went there. Send /support again to open a new ticket."
        ) % {"number": target.number}
        return _went_elsewhere(incoming, workflows, workflow, cancelled)
    if workflow.unreadable:
        _finish(workflows, workflow)
        return [Say(UNREADABLE_REQUEST)]
    if workflow.expired:
        _finish(workflows, workflow)
        return _after_expired_request(incoming)
    if incoming.content is None:
        return [Say(f"{incoming.content_error}\n" + _("Send it again, or /support to start over."))]
    _open(incoming, incoming.content)
    _finish(workflows, workflow)
    return []


def reply_step(incoming: Incoming, store: KVStore) -> list[Say]:
    """The one message after an admin pressed Reply.

    A reply to a message of a ticket names that ticket explicitly: it is handled as it would
    be without the workflow (the answer to that ticket), whatever ticket the workflow was for
    and whether it expired, and the workflow ends.
    """
    waiting = _waiting(incoming, store, REPLY)
    if isinstance(waiting, list):
        return waiting
    workflows, workflow = waiting
    number = workflow.data.get("number", "?")
    ticket_id = int(workflow.data.get("ticket_id", 0))
    target = _reply_target(incoming)
    if target is not None:
        cancelled = _(
            "Your answer to ticket #%(number)s is cancelled: your message replies to "
            "ticket #%(other)s, so it went there. Press Reply on ticket #%(number)s "
            "again to answer it."
        ) % {"number": number, "other": target.number}
        other = target.pk != ticket_id
        return _went_elsewhere(incoming, workflows, workflow, cancelled if other else None)
    if workflow.unreadable:
        _finish(workflows, workflow)
        return [
            Say(
                _(
                    "Your answer cannot be taken after an update of the bot. Press Reply on "
                    "the ticket again."
                )
            )
        ]
    if workflow.expired:
        _finish(workflows, workflow)
        return [
            Say(
                _("Your answer to ticket #%(number)s expired. Press Reply again.")
                % {"number": number}
            )
        ]
    if incoming.content is None:
        return [
            Say(
                f"{incoming.content_error}\n"
                + _("Send your answer to ticket #%(number)s again.") % {"number": number}
            )
        ]
    says = _answer_ticket(incoming, ticket_id)
    _finish(workflows, workflow)
    return says


# --- Telegram: buttons -----------------------------------------------------------------------
def reply_pressed(incoming: Incoming, data: str, store: KVStore) -> Pressed:
    """Reply (admins): wait for the admin's answer to the ticket as their next message."""
    pressed = _pressed_ticket(data)
    if isinstance(pressed, Pressed):
        return pressed
    _button, ticket = pressed
    if not ticket.is_open:
        return Pressed(
            _("Ticket #%(number)s is closed; reopen it to answer.") % {"number": ticket.number},
            alert=True,
        )
    WorkflowStore(store, OPEN, REPLY).start(
        chat_id=incoming.chat_id,
        user_id=incoming.user_id,
        name=REPLY.name,
        step="answer",
        ttl_ms=conf.reply_workflow_ttl_ms(),
        data={"ticket_id": ticket.pk, "number": ticket.number},
    )
    prompt = Say(
        _(
            "Send your answer to ticket #%(number)s as one message (text, a photo, a document "
            "or a voice message). The user receives it marked with the ticket number."
        )
        % {"number": ticket.number},
        ticket=ticket,
    )
    return Pressed(says=[prompt])


def resolve_pressed(incoming: Incoming, data: str) -> Pressed:
    """Resolve (admins): close the ticket and tell the user; the panel goes back to its list."""
    if _resume(incoming.update_id) is not None:
        return Pressed(_("Done."))
    pressed = _pressed_ticket(data)
    if isinstance(pressed, Pressed):
        return pressed
    button, ticket = pressed
    try:
        with auditing.incoming_step(incoming, ticket, "ticket.resolve", source="button") as step:
            _entry, result = resolve(
                ticket_id=ticket.pk,
                author=incoming.author,
                origin=Origin(update_id=incoming.update_id),
            )
            auditing.note_delivery(step, result)
    except BotError as exc:
        return Pressed(exc.user_message, alert=True, remove_buttons=True)
    if result.delivered or result.in_progress:
        told = _("The user was told.")
    elif result.uncertain:
        told = _("Whether the user was told is uncertain: %(error)s.") % {"error": result.error}
    else:
        told = _("The user could not be told: %(error)s.") % {"error": result.error}
    text = clip(_("Ticket #%(number)s resolved.") % {"number": ticket.number} + " " + told, 200)
    alert = not (result.delivered or result.in_progress)
    if button.page is not None:  # pressed in the panel: back to its list
        return Pressed(text, alert=alert, view=panel.list_view(button.page))
    return Pressed(text, alert=alert, remove_buttons=True)


def close_pressed(incoming: Incoming, data: str) -> Pressed:
    """Close (the user's own ticket). One answer whether another user's ticket has that id or
    none does, so the button cannot be used to probe ticket ids."""
    if _resume(incoming.update_id) is not None:
        return Pressed(_("Done."))
    button = _button(data)
    if isinstance(button, Pressed):
        return button
    ticket = selectors.ticket_get(button.ticket_id)
    if ticket is None or ticket.user_id != incoming.user_id:
        return Pressed(NO_SUCH_TICKET, alert=True)
    try:
        says = _close_by_user(ticket, incoming.author, Origin(update_id=incoming.update_id))
    except BotError as exc:
        return Pressed(exc.user_message, alert=True)
    text = says[0].text if says else _("Ticket #%(number)s closed.") % {"number": ticket.number}
    return Pressed(text, remove_buttons=True)


def rate_pressed(incoming: Incoming, data: str) -> Pressed:
    """Good / bad under the notice of a closed ticket: recorded once, for its own user."""
    try:
        ticket_id, rating = check_rating(data)
    except ValidationError as exc:
        return Pressed(exc.user_message, alert=True)
    ticket = ticket_rate(ticket_id=ticket_id, user_id=incoming.user_id, rating=rating)
    if ticket is None:
        current = selectors.ticket_get(ticket_id)
        if current is None or current.user_id != incoming.user_id:
            return Pressed(NO_SUCH_TICKET, alert=True)
        if current.rating:
            return Pressed(_("You rated this ticket already. Thank you!"), remove_buttons=True)
        return Pressed(_("You can rate a ticket once it is closed."), alert=True)
    staff.rating_noted(ticket)
    return Pressed(_("Thank you for your feedback!"), remove_buttons=True)


def list_pressed(data: str) -> Pressed:
    """The panel's ticket list, at a page."""
    button = _button(data)
    if isinstance(button, Pressed):
        return button
    return Pressed(view=panel.list_view(button.page or 1))


def view_pressed(data: str) -> Pressed:
    """One ticket in the panel."""
    pressed = _pressed_ticket(data)
    if isinstance(pressed, Pressed):
        return pressed
    button, ticket = pressed
    return Pressed(view=panel.ticket_view(ticket, button.page or 1))


# --- placing a message -----------------------------------------------------------------------
def _private_message(incoming: Incoming) -> list[Say]:
    """A plain private message, outside any workflow: an admin's reply to a ticket
    notification answers that ticket; anything else is the sender's follow-up (or guidance)."""
    if incoming.is_admin and incoming.reply_to_message_id is not None:
        ticket = selectors.ticket_for_admin_message(
            chat_id=incoming.chat_id, message_id=incoming.reply_to_message_id
        )
        if ticket is not None:
            return _answer_ticket(incoming, ticket.pk)
    return _user_message(incoming)[1]


def _reply_target(incoming: Incoming, *, reopenable_only: bool = False) -> Ticket | None:
    """The ticket a reply explicitly addresses, if any.

    For an admin, the ticket of the notification (or prompt) replied to, whatever its status
    (a closed one is refused with a reason). For anyone, their own ticket whose message (the
    bot's, or their own) was replied to; with ``reopenable_only``, only if it can still take
    the message (open, or closed within the reopen window). A workflow step hands such a
    message to the ordinary path instead of consuming it, so a reply never opens a new ticket
    nor answers another one.
    """
    if incoming.reply_to_message_id is None:
        return None
    if incoming.is_admin:
        ticket = selectors.ticket_for_admin_message(
            chat_id=incoming.chat_id, message_id=incoming.reply_to_message_id
        )
        if ticket is not None:
            return ticket
    ticket = selectors.ticket_for_user_reply(
        chat_id=incoming.chat_id, user_id=incoming.user_id, message_id=incoming.reply_to_message_id
    )
    if ticket is None or not reopenable_only:
        return ticket
    return ticket if ticket.is_open or selectors.reopenable(ticket) else None


def _user_message(incoming: Incoming) -> tuple[TicketMessage | None, list[Say]]:
    """A plain private message from a user: a follow-up, a reopening reply, or guidance; the
    entry it stored, if any, and what to say.

    A reply to a bot message of a ticket (or to the user's own ticket message) goes to that
    ticket, reopening it if it was closed within the reopen window. Any other message goes to
    the user's newest open ticket. Without an open ticket nothing is stored and the user is
    told how to open or reopen one: a plain message never opens or reopens a ticket by itself.
    """
    target = None
    if incoming.reply_to_message_id is not None:
        target = selectors.ticket_for_user_reply(
            chat_id=incoming.chat_id,
            user_id=incoming.user_id,
            message_id=incoming.reply_to_message_id,
        )
    replied = target is not None
    if target is None:
        target = selectors.open_tickets_of(incoming.user_id).first()
        if target is None:
            return None, [_no_open_ticket(incoming)]
    if not target.is_open and not selectors.reopenable(target):
        days = conf.reopen_window().days
        return None, [
            Say(
                ngettext(
                    "Ticket #%(number)s was closed more than %(count)d day ago and cannot be "
                    "reopened. Send /support <your question> to open a new ticket.",
                    "Ticket #%(number)s was closed more than %(count)d days ago and cannot be "
                    "reopened. Send /support <your question> to open a new ticket.",
                    days,
                )
                % {"number": target.number, "count": days}
            )
        ]
    if incoming.content is None:
        return None, [Say(incoming.content_error)]
    try:
        entry, _created = ticket_add_user_message(
            ticket_id=target.pk,
            author=incoming.author,
            origin=incoming.origin,
            content=incoming.content,
            reopen=replied,
        )
    except TicketClosedError as exc:  # closed (and expired) between the read and the write
        return None, [Say(exc.user_message)]
    delivery.deliver(entry)
    return entry, []


def _after_expired_request(incoming: Incoming) -> list[Say]:
    """The message that comes after a ``/support`` wait expired (and replies to no ticket).

    It does not open a ticket: the user is told to start again. But a user with an open ticket
    does not lose it either: like any plain message it is added to their newest open ticket,
    and they are told where it went.
    """
    if not selectors.open_tickets_of(incoming.user_id).exists():
        return [Say(EXPIRED_REQUEST)]
    entry, refused = _user_message(incoming)
    if entry is None:
        return [Say(f"{refused[0].text}\n{EXPIRED_REQUEST}" if refused else EXPIRED_REQUEST)]
    return [
        Say(
            _(
                "Your /support request had expired, so this message was added to your open "
                "ticket #%(number)s. To open a new ticket instead, send /support again."
            )
            % {"number": entry.ticket.number}
        )
    ]


def _no_open_ticket(incoming: Incoming) -> Say:
    lines = [_("You have no open support ticket. Send /support <your question> to open one.")]
    closed = selectors.recently_closed_ticket(incoming.user_id)
    if closed is not None:
        days = conf.reopen_window().days
        lines.append(
            ngettext(
                "To reopen ticket #%(number)s, reply to one of its messages "
                "(possible for %(count)d day after closing).",
                "To reopen ticket #%(number)s, reply to one of its messages "
                "(possible for %(count)d days after closing).",
                days,
            )
            % {"number": closed.number, "count": days}
        )
    if incoming.is_admin:
        lines.append(_("To answer a ticket, reply to its notification or press its Reply button."))
    return Say("\n".join(lines))


def _answer_ticket(incoming: Incoming, ticket_id: int) -> list[Say]:
    """An admin's message is the answer to ``ticket_id``."""
    if incoming.content is None:
        return [Say(incoming.content_error)]
    ticket = selectors.ticket_get(ticket_id)
    try:
        with auditing.incoming_step(incoming, ticket, "ticket.reply", source="command") as step:
            entry, result = admin_reply(
                ticket_id=ticket_id,
                author=incoming.author,
                origin=incoming.origin,
                content=incoming.content,
            )
            auditing.note_delivery(step, result)
    except StateUnavailableError:
        raise  # a 503: the re-delivery resumes the answer (``_resumed``) and sends it
    except BotError as exc:
        return [Say(exc.user_message)]
    return [Say(delivery.report(entry.ticket, result), ticket=entry.ticket)]


def _close_by_user(ticket: Ticket, author: Author, origin: Origin) -> list[Say]:
    """``/close`` or the Close button: the user closes one of their own tickets."""
    if ticket.user_id != author.telegram_id:
        raise NotYourTicketError(f"ticket {ticket.pk} is not {author.telegram_id}'s")
    try:
        entry, _created = ticket_close(
            ticket_id=ticket.pk, by_user=True, author=author, origin=origin
        )
    except TicketClosedError as exc:
        return [Say(exc.user_message)]
    delivery.deliver(entry)
    return []


# --- re-deliveries ---------------------------------------------------------------------------
def _resumed(incoming: Incoming) -> list[Say] | None:
    """None unless this message was handled before (a re-delivery): then only its pending
    deliveries ran, and an admin's answer is reported again."""
    resumed = _resume(incoming.update_id)
    if resumed is None:
        return None
    entry, result = resumed
    answer = entry.sender == TicketMessage.Sender.ADMIN and entry.kind != TicketMessage.Kind.EVENT
    if answer and result.delivered is not None:
        return [Say(delivery.report(entry.ticket, result), ticket=entry.ticket)]
    return []


def _resume(update_id: int) -> tuple[TicketMessage, Delivery] | None:
    """If ``update_id`` already created its entry, finish its deliveries and return it."""
    entry = _existing(Origin(update_id=update_id))
    if entry is None:
        return None
    log.info("update %s: resumed ticket entry %s", update_id, entry.pk)
    return entry, delivery.deliver(entry)


# --- helpers of the Telegram side ------------------------------------------------------------
def _open(incoming: Incoming, content: Content) -> TicketMessage:
    """Open a ticket; the confirmation (``#N``) and the admin notifications follow."""
    entry, _created = ticket_open(
        bot_id=bot_id() or 0,
        user_id=incoming.user_id,
        chat_id=incoming.chat_id,
        author=incoming.author,
        origin=incoming.origin,
        content=content,
    )
    delivery.deliver(entry)
    return entry


def _button(data: str) -> Callback | Pressed:
    try:
        return check_callback(data)
    except ValidationError as exc:
        return Pressed(exc.user_message, alert=True)


def _pressed_ticket(data: str) -> tuple[Callback, Ticket] | Pressed:
    """The button and the ticket it names; else the answer to the press."""
    button = _button(data)
    if isinstance(button, Pressed):
        return button
    ticket = selectors.ticket_get(button.ticket_id)
    if ticket is None:
        return Pressed(TicketNotFoundError.user_message, alert=True)
    return button, ticket


def _waiting(
    incoming: Incoming, store: KVStore, kind: WorkflowKind
) -> tuple[WorkflowStore, Workflow] | list[Say]:
    """The workflow of ``kind`` that this message may continue; else what to say: a
    re-delivery ends it (only its pending sends ran), and without one the message is a plain
    one."""
    workflows = WorkflowStore(store, OPEN, REPLY)
    workflow = _workflow(workflows, incoming, kind)
    resumed = _resumed(incoming)
    if resumed is not None:
        _finish(workflows, workflow)
        return resumed
    if workflow is None:
        return _private_message(incoming)
    return workflows, workflow


def _went_elsewhere(
    incoming: Incoming, workflows: WorkflowStore, workflow: Workflow, cancelled: str | None
) -> list[Say]:
    """A message that replies to a ticket goes there, as without the workflow, which ends; a
    live one is told it was ``cancelled``."""
    _finish(workflows, workflow)
    says = _private_message(incoming)
    if cancelled is not None and not workflow.expired and not workflow.unreadable:
        says.append(Say(cancelled))
    return says


def _workflow(workflows: WorkflowStore, incoming: Incoming, kind: WorkflowKind) -> Workflow | None:
    workflow = workflows.get(chat_id=incoming.chat_id, user_id=incoming.user_id)
    return workflow if workflow is not None and workflow.name == kind.name else None


def _finish(workflows: WorkflowStore, workflow: Workflow | None) -> None:
    if workflow is not None:
        workflows.finish(workflow)


# --- the admin site's actions (and the answer from Telegram) ---------------------------------
def admin_reply(
    *, ticket_id: int, author: Author, origin: Origin, content: Content
) -> tuple[TicketMessage, Delivery]:
    """An answer from support (Telegram or the admin site), sent to the user."""
    entry, _created = ticket_reply(
        ticket_id=ticket_id, author=author, origin=origin, content=check_answer(content)
    )
    return entry, delivery.deliver(entry)


def resolve(*, ticket_id: int, author: Author, origin: Origin) -> tuple[TicketMessage, Delivery]:
    """Support closes the ticket; the user is told."""
    entry, _created = ticket_close(ticket_id=ticket_id, by_user=False, author=author, origin=origin)
    return entry, delivery.deliver(entry)


def reopen(*, ticket_id: int, author: Author, origin: Origin) -> tuple[TicketMessage, Delivery]:
    """Support reopens a closed ticket (any time); the user is told."""
    entry, _created = ticket_reopen(ticket_id=ticket_id, author=author, origin=origin)
    return entry, delivery.deliver(entry)


# --- writes: each one short transaction, nothing sent ----------------------------------------
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
        waiting_since=timezone.now(),
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
            user_message=_("Ticket #%(number)s is closed.") % {"number": ticket.number},
        )
    event = ""
    if not ticket.is_open:
        if not (reopen and selectors.reopenable(ticket)):
            raise TicketClosedError(
                f"ticket {ticket.pk} is closed",
                user_message=_("Ticket #%(number)s is closed.") % {"number": ticket.number},
            )
        _reopen(ticket)
        event = Event.REOPENED_BY_USER
    if ticket.waiting_since is None:  # the user waits for an answer from now on
        ticket.waiting_since = timezone.now()
        ticket.reminded_at = None
        ticket.save(update_fields=["waiting_since", "reminded_at"])
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
            user_message=_("Ticket #%(number)s is closed; reopen it before answering.")
            % {"number": ticket.number},
        )
    changed = ["waiting_since", "reminded_at"]
    ticket.waiting_since = ticket.reminded_at = None  # answered: nobody waits
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
            user_message=_("Ticket #%(number)s is already closed.") % {"number": ticket.number},
        )
    ticket.status = Ticket.Status.CLOSED
    ticket.closed_at = timezone.now()
    ticket.closed_by = Ticket.ClosedBy.USER if by_user else Ticket.ClosedBy.ADMIN
    ticket.waiting_since = None
    ticket.save(update_fields=["status", "closed_at", "closed_by", "waiting_since"])
    event = Event.CLOSED_BY_USER if by_user else Event.RESOLVED
    sender = TicketMessage.Sender.USER if by_user else TicketMessage.Sender.ADMIN
    return _entry_create(ticket, sender, author, origin, EVENT, event=event)


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
            user_message=_("Ticket #%(number)s is already open.") % {"number": ticket.number},
        )
    _reopen(ticket)
    return _entry_create(
        ticket, TicketMessage.Sender.ADMIN, author, origin, EVENT, event=Event.REOPENED_BY_ADMIN
    )


# --- helpers of the writes -----------------------------------------------------------------
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
    internal: bool = False,
) -> TicketMessage:
    return TicketMessage.objects.create(
        ticket=ticket,
        sender=sender,
        kind=content.kind,
        event=event,
        internal=internal,
        text=content.text,
        file_id=content.file_id,
        file_name=content.file_name,
        file_size=content.file_size,
        media_group_id=content.media_group_id,
        author_id=author.telegram_id,
        author_name=author.name[:200],
        update_id=origin.update_id,
        form_token=origin.form_token,
        source_chat_id=origin.chat_id,
        source_message_id=origin.message_id,
    )


def _subject(content: Content) -> str:
    summary = content.summary.strip()
    line = summary.splitlines()[0] if summary else content.kind
    return line if len(line) <= SUBJECT_LENGTH else line[: SUBJECT_LENGTH - 1] + "…"


# --- the staff group's writes (support.topic) ---------------------------------------------
def ticket_note(
    *, ticket_id: int, author: Author, origin: Origin, content: Content
) -> tuple[TicketMessage, bool]:
    """A staff note: recorded in the conversation, never sent to the user."""
    return _once(origin, lambda: _note_create(ticket_id, author, origin, content))


@transaction.atomic
def _note_create(ticket_id: int, author: Author, origin: Origin, content: Content) -> TicketMessage:
    ticket = _locked(ticket_id)
    return _entry_create(ticket, TicketMessage.Sender.ADMIN, author, origin, content, internal=True)


def ticket_assign(*, ticket_id: int, assignee: str) -> Ticket:
    """Set (or with "" clear) who the ticket is assigned to: ``tg:<id>`` or ``@username``."""
    with transaction.atomic():
        ticket = _locked(ticket_id)
        ticket.assignee = assignee[:150]
        ticket.save(update_fields=["assignee"])
    return ticket


def ticket_set_priority(*, ticket_id: int, priority: str) -> Ticket:
    with transaction.atomic():
        ticket = _locked(ticket_id)
        ticket.priority = priority
        ticket.save(update_fields=["priority"])
    return ticket


def ticket_rate(*, ticket_id: int, user_id: int, rating: str) -> Ticket | None:
    """The user's good / bad for their closed ticket, recorded once (the first press wins);
    None when the ticket is not theirs, not closed, or rated already."""
    rated = Ticket.objects.filter(
        pk=ticket_id, user_id=user_id, status=Ticket.Status.CLOSED, rating=""
    ).update(rating=rating, rated_at=timezone.now())
    return Ticket.objects.filter(pk=ticket_id).first() if rated else None
