"""What staff write in a ticket's topic of the staff group (the ``support.staff`` observer).

A plain message (text or a file) is the answer to the ticket's user; one that starts with the
note prefix (``SUPPORT_STAFF_NOTE_PREFIX``) stays in the group as a staff note, recorded in the
conversation; commands act on the ticket: ``/close``, ``/reopen``, ``/assign @name`` (or as a
reply to the person, or ``/assign me``), ``/unassign``, ``/priority low|normal|high``,
``/canned <name>``. Any other command stays internal. Every write goes through the tickets
service: an answer carries the update id (unique), so a re-delivered update sends nothing
twice.
"""

from __future__ import annotations

import logging
import re
from contextlib import AbstractContextManager
from dataclasses import dataclass

from django.conf import settings
from django.utils.translation import gettext as _

from support import delivery, selectors, services, staff
from support.errors import TicketClosedError
from support.models import CannedReply, Ticket
from support.services import Author, Origin
from support.validation import Content, check_text
from telegram_bot.audit import Actor, Step, audit_step
from telegram_bot.client import TelegramClient
from telegram_bot.errors import BotError, StateUnavailableError

log = logging.getLogger(__name__)
COMMANDS = frozenset({"close", "reopen", "assign", "unassign", "priority", "canned"})
_USERNAME = re.compile(r"^@([A-Za-z0-9_]{4,32})$")


@dataclass(frozen=True)
class StaffMessage:
    """A message in the staff group, reduced to what the desk uses. ``content`` is None for
    a command or what support cannot take (``content_error`` says why)."""

    update_id: int
    chat_id: int
    thread_id: int | None
    message_id: int
    user_id: int
    user_name: str
    text: str
    command: str | None
    args: str
    content: Content | None
    content_error: str = ""
    # Written by an administrator who "remains anonymous" (as the group): nobody to sign it.
    anonymous: bool = False
    # Who ``/assign`` names without an @username: the person replied to.
    replied_to: tuple[int, str] | None = None

    @property
    def author(self) -> Author:
        return Author(name=self.user_name, telegram_id=self.user_id)

    @property
    def origin(self) -> Origin:
        return Origin(update_id=self.update_id, chat_id=self.chat_id, message_id=self.message_id)


def staff_message(message: StaffMessage, client: TelegramClient) -> list[str]:
    """Handle a message of the staff group; return what to say in its topic."""
    if message.chat_id != staff.staff_chat_id() or not message.thread_id:
        return []
    ticket = selectors.ticket_by_topic(chat_id=message.chat_id, topic_id=message.thread_id)
    if ticket is None:
        if message.command in COMMANDS:
            return [_("This topic is not a support ticket.")]
        return []
    if message.anonymous:
        return [
            _(
                "Sent anonymously, so it was not forwarded to the user: turn off “Remain "
                "anonymous” in your administrator rights to answer or use commands."
            )
        ]
    if message.command is not None:
        return _command(message, ticket, client) if message.command in COMMANDS else []
    prefix = settings.SUPPORT_STAFF_NOTE_PREFIX
    if message.text.startswith(prefix):
        return _note(message, ticket)
    if message.content is None:
        return [message.content_error] if message.content_error else []
    return _answer(message, ticket, message.content)


def _answer(message: StaffMessage, ticket: Ticket, content: Content) -> list[str]:
    try:
        entry, result = services.admin_reply(
            ticket_id=ticket.pk, author=message.author, origin=message.origin, content=content
        )
    except StateUnavailableError:
        raise
    except TicketClosedError:
        closed = _("Ticket #%(number)s is closed: /reopen it to answer.")
        return [closed % {"number": ticket.number}]
    except BotError as exc:
        return [str(exc.user_message)]
    if result.delivered is False or result.uncertain:
        return [delivery.report(entry.ticket, result)]
    return []  # delivered (or in flight): the topic stays quiet


def _note(message: StaffMessage, ticket: Ticket) -> list[str]:
    text = message.text.removeprefix(settings.SUPPORT_STAFF_NOTE_PREFIX).strip()
    if not text:
        return []
    try:
        content = check_text(text)
    except BotError as exc:
        return [str(exc.user_message)]
    services.ticket_note(
        ticket_id=ticket.pk, author=message.author, origin=message.origin, content=content
    )
    return []


def _command(message: StaffMessage, ticket: Ticket, client: TelegramClient) -> list[str]:
    number = {"number": ticket.number}
    try:
        if message.command == "close":
            with _audited(message, ticket, "ticket.resolve"):
                services.resolve(ticket_id=ticket.pk, author=message.author, origin=message.origin)
            return []  # the topic closes; the user is told
        if message.command == "reopen":
            with _audited(message, ticket, "ticket.reopen"):
                services.reopen(ticket_id=ticket.pk, author=message.author, origin=message.origin)
            return []
    except StateUnavailableError:
        raise
    except BotError as exc:
        return [str(exc.user_message)]
    if message.command == "assign":
        return _assign(message, ticket)
    if message.command == "unassign":
        with _audited(message, ticket, "ticket.assign") as step:
            step.detail = "unassigned"
            services.ticket_assign(ticket_id=ticket.pk, assignee="")
        return [_("Ticket #%(number)s is unassigned.") % number]
    if message.command == "priority":
        choice = message.args.strip().lower()
        if choice not in Ticket.Priority.values:
            return [_("Usage: /priority low, /priority normal or /priority high.")]
        with _audited(message, ticket, "ticket.priority") as step:
            step.detail = choice
            ticket = services.ticket_set_priority(ticket_id=ticket.pk, priority=choice)
        staff.sync_topic(client, ticket)
        return [
            _("Ticket #%(number)s: priority %(priority)s.")
            % {**number, "priority": Ticket.Priority(choice).label}
        ]
    return _canned(message, ticket)


def _audited(message: StaffMessage, ticket: Ticket, action: str) -> AbstractContextManager[Step]:
    """A staff member's action in the topic, in the audit log once per update."""
    return audit_step(
        action,
        actor=Actor(message.user_id, message.user_name),
        source="command",
        chat_id=message.chat_id,
        update_id=message.update_id,
        target_id=ticket.user_id,
        target_name=f"ticket #{ticket.number}",
    )


def _assign(message: StaffMessage, ticket: Ticket) -> list[str]:
    """``/assign @name``, ``/assign me``, or ``/assign`` replying to the person."""
    args = message.args.strip()
    if args.lower() == "me":
        label, name = f"tg:{message.user_id}", message.user_name
    elif (match := _USERNAME.match(args)) is not None:
        label = name = f"@{match[1]}"
    elif not args and message.replied_to is not None:
        label, name = f"tg:{message.replied_to[0]}", message.replied_to[1]
    else:
        return [
            _(
                "Usage: /assign @username, /assign me, or /assign as a reply to the person's "
                "message."
            )
        ]
    with _audited(message, ticket, "ticket.assign") as step:
        step.detail = label
        services.ticket_assign(ticket_id=ticket.pk, assignee=label)
    assigned = _("Ticket #%(number)s is assigned to %(who)s.")
    return [assigned % {"number": ticket.number, "who": name}]


def _canned(message: StaffMessage, ticket: Ticket) -> list[str]:
    """``/canned <name>``: the saved answer, placeholders filled in, sent to the user."""
    name = message.args.strip().lower()
    reply = CannedReply.objects.filter(name__iexact=name).first() if name else None
    if reply is None:
        names = ", ".join(CannedReply.objects.values_list("name", flat=True)[:30]) or "—"
        return [_("Usage: /canned <name>. Saved answers: %(names)s.") % {"names": names}]
    try:
        content = check_text(render_canned(reply.text, ticket))
    except BotError as exc:
        return [str(exc.user_message)]
    # From the staff group (not echoed there), but not the command message itself: the
    # answer is the rendered text, sent as a message.
    origin = Origin(update_id=message.update_id, chat_id=message.chat_id)
    try:
        entry, result = services.admin_reply(
            ticket_id=ticket.pk, author=message.author, origin=origin, content=content
        )
    except StateUnavailableError:
        raise
    except BotError as exc:
        return [str(exc.user_message)]
    report = delivery.report(entry.ticket, result)
    return [f"{report}\n\n{content.text}"]


def render_canned(text: str, ticket: Ticket) -> str:
    """``{first_name}`` and ``{ticket}`` filled in; any other brace stays as written."""
    first_name = staff.first_name(ticket.user_name) or _("there")
    return text.replace("{first_name}", first_name).replace("{ticket}", f"#{ticket.number}")
