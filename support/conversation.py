"""What each support update does, one entry point per Telegram handler.

A handler reads the update into typed values (``Incoming``, the button data), calls one
function here and renders what it returns: the messages to send (``Say``) and, for a button,
the answer to the press (``Pressed``). The decisions (a re-delivery, the workflow a message
belongs to, which ticket it addresses) are made here, in one place; the use cases they lead
to are ``flows`` (shared with the admin site), which write through ``services`` and send
through ``delivery``.

Every entry point driven by a message first checks whether its update already produced a
ticket entry (a re-delivery after a crash or a 503): then it only finishes the pending
deliveries, and reports an admin's answer again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from support import auditing, conf, flows, panel, selectors
from support.delivery import Delivery, clip
from support.errors import TicketNotFoundError
from support.flows import Answer, Incoming
from support.models import Ticket, TicketMessage
from support.services import Origin
from support.validation import Callback, check_callback, check_text
from telegram_bot.errors import BotError, StateUnavailableError, ValidationError
from telegram_bot.state.workflows import Workflow, WorkflowStore

log = logging.getLogger(__name__)
OPEN_WORKFLOW = "support_open"
REPLY_WORKFLOW = "support_reply"
NO_SUCH_TICKET = gettext_lazy("You have no such ticket.")


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


# --- commands ---------------------------------------------------------------------------------
def support_command(incoming: Incoming, args: str, workflows: WorkflowStore) -> list[Say]:
    """``/support [text]`` in private: open a ticket, or wait for the request's one message."""
    resumed = _resumed(incoming)
    if resumed is not None:
        return resumed
    if not args:
        ttl_ms = conf.open_workflow_ttl_ms()
        workflows.start(
            chat_id=incoming.chat_id,
            user_id=incoming.user_id,
            name=OPEN_WORKFLOW,
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
        content = check_text(args)
    except ValidationError as exc:
        return [Say(exc.user_message)]
    _finish(workflows, _workflow(workflows, incoming, OPEN_WORKFLOW))
    flows.open_ticket(incoming, content)
    return []


def close_command(incoming: Incoming, args: str) -> list[Say]:
    resumed = _resumed(incoming)
    if resumed is not None:
        return resumed
    return _said(flows.close_request(incoming, args))


# --- plain private messages and workflows -----------------------------------------------------
def private_message(incoming: Incoming) -> list[Say]:
    """A plain private message: a follow-up, a reopening reply, an admin's reply."""
    resumed = _resumed(incoming)
    if resumed is not None:
        return resumed
    return _private_message(incoming)


def open_step(incoming: Incoming, workflows: WorkflowStore) -> list[Say]:
    """The one message after ``/support``.

    A reply to a message of one of the user's tickets (or, for an admin, to a ticket
    notification) is not the new request: it goes where it points, as it would without the
    workflow, and the workflow ends. An expired workflow says so only for a message that is
    not addressed to a ticket, and even then does not drop a follow-up: with an open ticket the
    message goes to it, as any plain message would. A reply to a ticket that can no longer
    take it (closed beyond the reopen window) is the requested new ticket's first message.
    """
    workflow = _workflow(workflows, incoming, OPEN_WORKFLOW)
    resumed = _resumed(incoming)
    if resumed is not None:
        _finish(workflows, workflow)
        return resumed
    if workflow is None:
        return _private_message(incoming)
    target = flows.reply_target(incoming, reopenable_only=True)
    if target is not None:
        _finish(workflows, workflow)
        says = _private_message(incoming)
        if not workflow.expired:
            says.append(
                Say(
                    _(
                        "Your /support request is cancelled: your message replies to ticket "
                        "#%(number)s, so it went there. Send /support again to open a new ticket."
                    )
                    % {"number": target.number}
                )
            )
        return says
    if workflow.expired:
        _finish(workflows, workflow)
        return _said(flows.after_expired_request(incoming))
    if incoming.content is None:
        return [Say(f"{incoming.content_error}\n" + _("Send it again, or /support to start over."))]
    flows.open_ticket(incoming, incoming.content)
    _finish(workflows, workflow)
    return []


def reply_step(incoming: Incoming, workflows: WorkflowStore) -> list[Say]:
    """The one message after an admin pressed Reply.

    A reply to a message of a ticket names that ticket explicitly: it is handled as it would
    be without the workflow (the answer to that ticket), whatever ticket the workflow was for
    and whether it expired, and the workflow ends.
    """
    workflow = _workflow(workflows, incoming, REPLY_WORKFLOW)
    resumed = _resumed(incoming)
    if resumed is not None:
        _finish(workflows, workflow)
        return resumed
    if workflow is None:
        return _private_message(incoming)
    number = workflow.data.get("number", "?")
    ticket_id = int(workflow.data.get("ticket_id", 0))
    target = flows.reply_target(incoming)
    if target is not None:
        _finish(workflows, workflow)
        says = _private_message(incoming)
        if target.pk != ticket_id and not workflow.expired:
            says.append(
                Say(
                    _(
                        "Your answer to ticket #%(number)s is cancelled: your message replies to "
                        "ticket #%(other)s, so it went there. Press Reply on ticket #%(number)s "
                        "again to answer it."
                    )
                    % {"number": number, "other": target.number}
                )
            )
        return says
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


# --- buttons ----------------------------------------------------------------------------------
def reply_pressed(incoming: Incoming, data: str, workflows: WorkflowStore) -> Pressed:
    """Reply (admins): wait for the admin's answer to the ticket as their next message."""
    button = _button(data)
    if isinstance(button, Pressed):
        return button
    ticket = _button_ticket(button)
    if isinstance(ticket, Pressed):
        return ticket
    if not ticket.is_open:
        return Pressed(
            _("Ticket #%(number)s is closed; reopen it to answer.") % {"number": ticket.number},
            alert=True,
        )
    workflows.start(
        chat_id=incoming.chat_id,
        user_id=incoming.user_id,
        name=REPLY_WORKFLOW,
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
    if _resume(incoming) is not None:
        return Pressed(_("Done."))
    button = _button(data)
    if isinstance(button, Pressed):
        return button
    ticket = _button_ticket(button)
    if isinstance(ticket, Pressed):
        return ticket
    try:
        with auditing.incoming_step(incoming, ticket, "ticket.resolve", source="button") as step:
            _entry, result = flows.resolve(
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
    if _resume(incoming) is not None:
        return Pressed(_("Done."))
    button = _button(data)
    if isinstance(button, Pressed):
        return button
    ticket = selectors.ticket_get(button.ticket_id)
    if ticket is None or ticket.user_id != incoming.user_id:
        return Pressed(NO_SUCH_TICKET, alert=True)
    try:
        answer = flows.close_by_user(
            ticket=ticket, author=incoming.author, origin=Origin(update_id=incoming.update_id)
        )
    except BotError as exc:
        return Pressed(exc.user_message, alert=True)
    text = answer.text if answer else _("Ticket #%(number)s closed.") % {"number": ticket.number}
    return Pressed(text, remove_buttons=True)


def list_pressed(data: str) -> Pressed:
    """The panel's ticket list, at a page."""
    button = _button(data)
    if isinstance(button, Pressed):
        return button
    return Pressed(view=panel.list_view(button.page or 1))


def view_pressed(data: str) -> Pressed:
    """One ticket in the panel."""
    button = _button(data)
    if isinstance(button, Pressed):
        return button
    ticket = _button_ticket(button)
    if isinstance(ticket, Pressed):
        return ticket
    return Pressed(view=panel.ticket_view(ticket, button.page or 1))


# --- helpers ----------------------------------------------------------------------------------
def _private_message(incoming: Incoming) -> list[Say]:
    """A plain private message, outside any workflow: an admin's reply to a ticket
    notification answers that ticket; anything else is the sender's follow-up (or guidance)."""
    if incoming.is_admin and incoming.reply_to_message_id is not None:
        ticket = selectors.ticket_for_admin_message(
            chat_id=incoming.chat_id, message_id=incoming.reply_to_message_id
        )
        if ticket is not None:
            return _answer_ticket(incoming, ticket.pk)
    return _said(flows.user_message(incoming))


def _answer_ticket(incoming: Incoming, ticket_id: int) -> list[Say]:
    """An admin's message is the answer to ``ticket_id``."""
    if incoming.content is None:
        return [Say(incoming.content_error)]
    ticket = selectors.ticket_get(ticket_id)
    try:
        with auditing.incoming_step(incoming, ticket, "ticket.reply", source="command") as step:
            entry, result = flows.admin_reply(
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
    return [_report(entry.ticket, result)]


def _resumed(incoming: Incoming) -> list[Say] | None:
    """None unless this message was handled before (a re-delivery): then only its pending
    deliveries ran, and an admin's answer is reported again."""
    resumed = _resume(incoming)
    if resumed is None:
        return None
    entry, result = resumed
    answer = entry.sender == TicketMessage.Sender.ADMIN and entry.kind != TicketMessage.Kind.EVENT
    if answer and result.delivered is not None:
        return [_report(entry.ticket, result)]
    return []


def _resume(incoming: Incoming) -> tuple[TicketMessage, Delivery] | None:
    resumed = flows.resume(incoming.update_id)
    if resumed is not None:
        log.info("update %s: resumed ticket entry %s", incoming.update_id, resumed[0].pk)
    return resumed


def _report(ticket: Ticket, result: Delivery) -> Say:
    return Say(flows.delivery_report(ticket, result), ticket=ticket)


def _said(answer: Answer | None) -> list[Say]:
    return [] if answer is None else [Say(answer.text, answer.markup)]


def _button(data: str) -> Callback | Pressed:
    try:
        return check_callback(data)
    except ValidationError as exc:
        return Pressed(exc.user_message, alert=True)


def _button_ticket(button: Callback) -> Ticket | Pressed:
    ticket = selectors.ticket_get(button.ticket_id)
    if ticket is None:
        return Pressed(TicketNotFoundError.user_message, alert=True)
    return ticket


def _workflow(workflows: WorkflowStore, incoming: Incoming, name: str) -> Workflow | None:
    workflow = workflows.get(chat_id=incoming.chat_id, user_id=incoming.user_id)
    return workflow if workflow is not None and workflow.name == name else None


def _finish(workflows: WorkflowStore, workflow: Workflow | None) -> None:
    if workflow is not None:
        workflows.finish(workflow)
