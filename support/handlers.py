"""Telegram handlers of the support desk (thin: read the update, call a flow, answer).

Commands: ``/support [text]`` (private; without text it waits for one message, a workflow with
a TTL) and ``/close [N]``. Plain private messages: follow-ups, replies that reopen, and admins'
replies to ticket notifications. Buttons (``sup:`` callback data, see ``validation.py``):
Reply, Resolve, the user's Close, and the panel's list and ticket views.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from support import conf, delivery, flows, panel, selectors
from support.errors import TicketNotFoundError
from support.flows import Answer, Incoming
from support.models import Ticket, TicketMessage
from support.services import Author, Origin
from support.validation import Callback, Content, check_callback, check_message_content, check_text
from telegram_bot.admins import Role
from telegram_bot.errors import BotError, TelegramApiError, ValidationError
from telegram_bot.pipeline.context import Context
from telegram_bot.pipeline.router import PanelEntry, Route
from telegram_bot.state.workflows import Workflow, WorkflowStore
from telegram_bot.updates import User

log = logging.getLogger(__name__)
OPEN_WORKFLOW = "support_open"
REPLY_WORKFLOW = "support_reply"
NO_SUCH_TICKET = gettext_lazy("You have no such ticket.")


def _needs_sender(handler: Callable[[Context], None]) -> Callable[[Context], None]:
    """Tickets, workflows and answers belong to a Telegram user: an update that names none
    (a message without ``from``) is ignored here, never filed under user 0."""

    @wraps(handler)
    def checked(ctx: Context) -> None:
        if not ctx.sender.user_id or ctx.chat_id is None:
            log.info("update %s: no sender, ignored by support", ctx.update.update_id)
            return
        handler(ctx)

    return checked


# --- commands --------------------------------------------------------------------------------
@_needs_sender
def support_command(ctx: Context) -> None:
    if not ctx.in_private:
        ctx.reply(_("To contact support, send /support to me in a private chat."))
        return
    if _resumed(ctx):
        return
    args = ctx.command.args if ctx.command else ""
    workflows = WorkflowStore(ctx.store)
    chat_id, user_id = _chat_and_user(ctx)
    if not args:
        workflows.start(
            chat_id=chat_id,
            user_id=user_id,
            name=OPEN_WORKFLOW,
            step="message",
            ttl_ms=conf.open_workflow_ttl_ms(),
        )
        minutes = max(1, conf.open_workflow_ttl_ms() // 60_000)
        ctx.reply(
            ngettext(
                "Send your request as one message: text, a photo, a document or a voice message. "
                "I'll wait %(count)d minute.",
                "Send your request as one message: text, a photo, a document or a voice message. "
                "I'll wait %(count)d minutes.",
                minutes,
            )
            % {"count": minutes}
        )
        return
    try:
        content = check_text(args)
    except ValidationError as exc:
        ctx.reply(exc.user_message)
        return
    _finish_workflow(workflows, chat_id, user_id, OPEN_WORKFLOW)
    flows.open_ticket(_incoming(ctx), content)


@_needs_sender
def close_command(ctx: Context) -> None:
    if _resumed(ctx):
        return
    args = ctx.command.args if ctx.command else ""
    _say(ctx, flows.close_request(_incoming(ctx), args))


# --- plain private messages and workflows ----------------------------------------------------
@_needs_sender
def private_message(ctx: Context) -> None:
    """The handler of plain private messages: follow-ups, reopening, admins' replies."""
    if _resumed(ctx):
        return
    _private_message(ctx, _incoming(ctx))


@_needs_sender
def open_step(ctx: Context) -> None:
    """The one message after ``/support``.

    A reply to a message of one of the user's tickets (or, for an admin, to a ticket
    notification) is not the new request: it goes where it points, as it would without the
    workflow, and the workflow ends. An expired workflow says so only for a message that is
    not addressed to a ticket, and even then does not drop a follow-up: with an open ticket the
    message goes to it, as any plain message would. A reply to a ticket that can no longer
    take it (closed beyond the reopen window) is the requested new ticket's first message.
    """
    workflows = WorkflowStore(ctx.store)
    workflow = _workflow(ctx, workflows, OPEN_WORKFLOW)
    if _resumed(ctx):
        _finish(workflows, workflow)
        return
    incoming = _incoming(ctx)
    if workflow is None:
        _private_message(ctx, incoming)
        return
    target = flows.reply_target(incoming, reopenable_only=True)
    if target is not None:
        _finish(workflows, workflow)
        _private_message(ctx, incoming)
        if not workflow.expired:
            ctx.reply(
                _(
                    "Your /support request is cancelled: your message replies to ticket "
                    "#%(number)s, so it went there. Send /support again to open a new ticket."
                )
                % {"number": target.number}
            )
        return
    if workflow.expired:
        _finish(workflows, workflow)
        _say(ctx, flows.after_expired_request(incoming))
        return
    if incoming.content is None:
        ctx.reply(f"{incoming.content_error}\n" + _("Send it again, or /support to start over."))
        return
    flows.open_ticket(incoming, incoming.content)
    _finish(workflows, workflow)


@_needs_sender
def reply_step(ctx: Context) -> None:
    """The one message after an admin pressed Reply.

    A reply to a message of a ticket names that ticket explicitly: it is handled as it would
    be without the workflow (the answer to that ticket), whatever ticket the workflow was for
    and whether it expired, and the workflow ends.
    """
    workflows = WorkflowStore(ctx.store)
    workflow = _workflow(ctx, workflows, REPLY_WORKFLOW)
    if _resumed(ctx):
        _finish(workflows, workflow)
        return
    incoming = _incoming(ctx)
    if workflow is None:
        _private_message(ctx, incoming)
        return
    number = workflow.data.get("number", "?")
    ticket_id = int(workflow.data.get("ticket_id", 0))
    target = flows.reply_target(incoming)
    if target is not None:
        _finish(workflows, workflow)
        _private_message(ctx, incoming)
        if target.pk != ticket_id and not workflow.expired:
            ctx.reply(
                _(
                    "Your answer to ticket #%(number)s is cancelled: your message replies to "
                    "ticket #%(other)s, so it went there. Press Reply on ticket #%(number)s again "
                    "to answer it."
                )
                % {"number": number, "other": target.number}
            )
        return
    if workflow.expired:
        _finish(workflows, workflow)
        ctx.reply(
            _("Your answer to ticket #%(number)s expired. Press Reply again.") % {"number": number}
        )
        return
    if incoming.content is None:
        ctx.reply(
            f"{incoming.content_error}\n"
            + _("Send your answer to ticket #%(number)s again.") % {"number": number}
        )
        return
    _answer_ticket(ctx, incoming, ticket_id)
    _finish(workflows, workflow)


def _private_message(ctx: Context, incoming: Incoming) -> None:
    """A plain private message, outside any workflow: an admin's reply to a ticket
    notification answers that ticket; anything else is the sender's follow-up (or guidance)."""
    if ctx.sender.is_admin and incoming.reply_to_message_id is not None:
        ticket = selectors.ticket_for_admin_message(
            chat_id=incoming.chat_id, message_id=incoming.reply_to_message_id
        )
        if ticket is not None:
            _answer_ticket(ctx, incoming, ticket.pk)
            return
    _say(ctx, flows.user_message(incoming))


# --- buttons ---------------------------------------------------------------------------------
@_needs_sender
def reply_button(ctx: Context) -> None:
    button = _button(ctx)
    ticket = _button_ticket(ctx, button)
    if ticket is None:
        return
    if not ticket.is_open:
        ctx.answer_callback(
            _("Ticket #%(number)s is closed; reopen it to answer.") % {"number": ticket.number},
            alert=True,
        )
        return
    chat_id, user_id = _chat_and_user(ctx)
    WorkflowStore(ctx.store).start(
        chat_id=chat_id,
        user_id=user_id,
        name=REPLY_WORKFLOW,
        step="answer",
        ttl_ms=conf.reply_workflow_ttl_ms(),
        data={"ticket_id": ticket.pk, "number": ticket.number},
    )
    ctx.answer_callback()
    sent = ctx.reply(
        _(
            "Send your answer to ticket #%(number)s as one message (text, a photo, a document "
            "or a voice message). The user receives it marked with the ticket number."
        )
        % {"number": ticket.number}
    )
    delivery.link_admin_message(ticket, sent)


@_needs_sender
def resolve_button(ctx: Context) -> None:
    if _resumed(ctx):
        ctx.answer_callback(_("Done."))
        return
    button = _button(ctx)
    ticket = _button_ticket(ctx, button)
    if ticket is None or button is None:
        return
    author = _author(ctx)
    try:
        result = flows.resolve(
            ticket_id=ticket.pk, author=author, origin=Origin(update_id=ctx.update.update_id)
        )[1]
    except BotError as exc:
        ctx.answer_callback(exc.user_message, alert=True)
        _remove_buttons(ctx)
        return
    if result.delivered or result.in_progress:
        told = _("The user was told.")
    elif result.uncertain:
        told = _("Whether the user was told is uncertain: %(error)s.") % {"error": result.error}
    else:
        told = _("The user could not be told: %(error)s.") % {"error": result.error}
    alert = not (result.delivered or result.in_progress)
    ctx.answer_callback(
        delivery.clip(
            _("Ticket #%(number)s resolved.") % {"number": ticket.number} + " " + told, 200
        ),
        alert=alert,
    )
    if button.page is not None:  # pressed in the panel: back to its list
        _edit(ctx, *panel.list_view(button.page))
    else:
        _remove_buttons(ctx)


@_needs_sender
def close_button(ctx: Context) -> None:
    if _resumed(ctx):
        ctx.answer_callback(_("Done."))
        return
    ticket = _own_ticket(ctx, _button(ctx))
    if ticket is None:
        return
    try:
        answer = flows.close_by_user(
            ticket=ticket, author=_author(ctx), origin=Origin(update_id=ctx.update.update_id)
        )
    except BotError as exc:
        ctx.answer_callback(exc.user_message, alert=True)
        return
    ctx.answer_callback(
        answer.text if answer else _("Ticket #%(number)s closed.") % {"number": ticket.number}
    )
    _remove_buttons(ctx)


def list_button(ctx: Context) -> None:
    button = _button(ctx)
    if button is None:
        return
    ctx.answer_callback()
    _edit(ctx, *panel.list_view(button.page or 1))


def view_button(ctx: Context) -> None:
    button = _button(ctx)
    ticket = _button_ticket(ctx, button)
    if ticket is None or button is None:
        return
    ctx.answer_callback()
    _edit(ctx, *panel.ticket_view(ticket, button.page or 1))


def invalid_button(ctx: Context) -> None:
    ctx.answer_callback(_("This button is not valid."), alert=True)


# --- helpers ---------------------------------------------------------------------------------
def _incoming(ctx: Context) -> Incoming:
    message = ctx.update.effective_message
    reply_to = message.reply_to_message if message is not None else None
    content: Content | None = None
    error = ""
    if ctx.update.message is not None and ctx.command is None:
        try:
            content = check_message_content(ctx.update.message)
        except ValidationError as exc:
            error = exc.user_message
    chat_id, user_id = _chat_and_user(ctx)
    return Incoming(
        update_id=ctx.update.update_id,
        chat_id=chat_id,
        user_id=user_id,
        user_name=_display_name(ctx.update.user),
        message_id=message.message_id if message is not None else 0,
        reply_to_message_id=reply_to.message_id if reply_to is not None else None,
        content=content,
        content_error=error,
        is_admin=ctx.sender.is_admin,
    )


def _answer_ticket(ctx: Context, incoming: Incoming, ticket_id: int) -> None:
    """An admin's message is the answer to ``ticket_id``."""
    if incoming.content is None:
        ctx.reply(incoming.content_error)
        return
    try:
        entry, result = flows.admin_reply(
            ticket_id=ticket_id,
            author=_author(ctx),
            origin=incoming.origin,
            content=incoming.content,
        )
    except BotError as exc:
        ctx.reply(exc.user_message)
        return
    _report(ctx, entry.ticket, result)


def _resumed(ctx: Context) -> bool:
    """True if this update was handled before (a re-delivery): only pending deliveries ran."""
    resumed = flows.resume(ctx.update.update_id)
    if resumed is None:
        return False
    entry, result = resumed
    log.info("update %s: resumed ticket entry %s", ctx.update.update_id, entry.pk)
    answer = entry.sender == TicketMessage.Sender.ADMIN and entry.kind != TicketMessage.Kind.EVENT
    if answer and result.delivered is not None and ctx.update.type == "message":
        _report(ctx, entry.ticket, result)
    return True


def _report(ctx: Context, ticket: Ticket, result: flows.Delivery) -> None:
    sent = ctx.reply(flows.delivery_report(ticket, result))
    delivery.link_admin_message(ticket, sent)


def _say(ctx: Context, answer: Answer | None) -> None:
    if answer is None:
        return
    ctx.reply(answer.text, reply_markup=answer.markup)


def _button(ctx: Context) -> Callback | None:
    try:
        return check_callback(ctx.update.callback_data)
    except ValidationError as exc:
        ctx.answer_callback(exc.user_message, alert=True)
        return None


def _button_ticket(ctx: Context, button: Callback | None) -> Ticket | None:
    if button is None:
        return None
    ticket = selectors.ticket_get(button.ticket_id)
    if ticket is None:
        ctx.answer_callback(TicketNotFoundError.user_message, alert=True)
    return ticket


def _own_ticket(ctx: Context, button: Callback | None) -> Ticket | None:
    """The presser's own ticket of the button; one answer whether another user's ticket has
    that id or none does, so the button cannot be used to probe ticket ids."""
    if button is None:
        return None
    ticket = selectors.ticket_get(button.ticket_id)
    if ticket is None or ticket.user_id != ctx.sender.user_id:
        ctx.answer_callback(NO_SUCH_TICKET, alert=True)
        return None
    return ticket


def _author(ctx: Context) -> Author:
    return Author(name=_display_name(ctx.update.user), telegram_id=ctx.sender.user_id)


def _chat_and_user(ctx: Context) -> tuple[int, int]:
    return int(ctx.chat_id or 0), int(ctx.sender.user_id or 0)


def _display_name(user: User | None) -> str:
    if user is None:
        return ""
    name = user.full_name.strip()
    if user.username:
        name = f"{name} (@{user.username})".strip()
    return name[:200]


def _workflow(ctx: Context, workflows: WorkflowStore, name: str) -> Workflow | None:
    chat_id, user_id = _chat_and_user(ctx)
    workflow = workflows.get(chat_id=chat_id, user_id=user_id)
    return workflow if workflow is not None and workflow.name == name else None


def _finish(workflows: WorkflowStore, workflow: Workflow | None) -> None:
    if workflow is not None:
        workflows.finish(workflow)


def _finish_workflow(workflows: WorkflowStore, chat_id: int, user_id: int, name: str) -> None:
    workflow = workflows.get(chat_id=chat_id, user_id=user_id)
    if workflow is not None and workflow.name == name:
        workflows.finish(workflow)


def _edit(ctx: Context, text: str, markup: dict[str, Any]) -> None:
    try:
        ctx.edit_callback_message(text, reply_markup=markup)
    except TelegramApiError as exc:  # "message is not modified", a deleted message
        log.info("panel edit failed: %s", exc)


def _remove_buttons(ctx: Context) -> None:
    query = ctx.update.callback_query
    message = query.message if query is not None else None
    if message is None:
        return
    try:
        ctx.client.edit_message_reply_markup(chat_id=message.chat.id, message_id=message.message_id)
    except TelegramApiError as exc:
        log.info("removing buttons failed: %s", exc)


ROUTES: list[Route] = [
    Route.on_command(
        "support",
        support_command,
        help=gettext_lazy("contact support (/support <your question>)"),
        expensive=True,
    ),
    Route.on_command(
        "close",
        close_command,
        help=gettext_lazy("close your support ticket"),
        chat_types=("private",),
    ),
    Route.on_workflow(OPEN_WORKFLOW, open_step),
    Route.on_workflow(REPLY_WORKFLOW, reply_step, role=Role.ADMIN),
    Route.on_callback("sup:reply:", reply_button, role=Role.ADMIN),
    Route.on_callback("sup:resolve:", resolve_button, role=Role.ADMIN),
    Route.on_callback("sup:list:", list_button, role=Role.ADMIN),
    Route.on_callback("sup:view:", view_button, role=Role.ADMIN),
    Route.on_callback("sup:close:", close_button),
    Route.on_callback("sup:", invalid_button),
    Route.on_update("message", private_message, chat_types=("private",)),
]
PANEL_ENTRIES: list[PanelEntry] = [
    PanelEntry(gettext_lazy("Support tickets"), "sup:list:1", order=10)
]
