"""Telegram handlers of the support desk (thin: read the update, make one call to
``conversation``, render what it returns).

Commands: ``/support [text]`` (private; without text it waits for one message, a workflow with
a TTL) and ``/close [N]``. Plain private messages: follow-ups, replies that reopen, and admins'
replies to ticket notifications. Buttons (``sup:`` callback data, see ``validation.py``):
Reply, Resolve, the user's Close, and the panel's list and ticket views.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import wraps

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from support import conversation, delivery
from support.conversation import OPEN_WORKFLOW, REPLY_WORKFLOW, Pressed, Say
from support.flows import Incoming
from support.validation import Content, check_message_content
from telegram_bot.admins import Role
from telegram_bot.errors import TelegramApiError, ValidationError
from telegram_bot.pipeline.context import Context
from telegram_bot.pipeline.router import PanelEntry, Route
from telegram_bot.state.workflows import WorkflowStore
from telegram_bot.updates import User

log = logging.getLogger(__name__)


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
    _say(ctx, conversation.support_command(_incoming(ctx), _args(ctx), WorkflowStore(ctx.store)))


@_needs_sender
def close_command(ctx: Context) -> None:
    _say(ctx, conversation.close_command(_incoming(ctx), _args(ctx)))


# --- plain private messages and workflows ----------------------------------------------------
@_needs_sender
def private_message(ctx: Context) -> None:
    """The handler of plain private messages: follow-ups, reopening, admins' replies."""
    _say(ctx, conversation.private_message(_incoming(ctx)))


@_needs_sender
def open_step(ctx: Context) -> None:
    """The one message after ``/support``."""
    _say(ctx, conversation.open_step(_incoming(ctx), WorkflowStore(ctx.store)))


@_needs_sender
def reply_step(ctx: Context) -> None:
    """The one message after an admin pressed Reply."""
    _say(ctx, conversation.reply_step(_incoming(ctx), WorkflowStore(ctx.store)))


# --- buttons ---------------------------------------------------------------------------------
@_needs_sender
def reply_button(ctx: Context) -> None:
    data = ctx.update.callback_data
    _press(ctx, conversation.reply_pressed(_incoming(ctx), data, WorkflowStore(ctx.store)))


@_needs_sender
def resolve_button(ctx: Context) -> None:
    _press(ctx, conversation.resolve_pressed(_incoming(ctx), ctx.update.callback_data))


@_needs_sender
def close_button(ctx: Context) -> None:
    _press(ctx, conversation.close_pressed(_incoming(ctx), ctx.update.callback_data))


def list_button(ctx: Context) -> None:
    _press(ctx, conversation.list_pressed(ctx.update.callback_data))


def view_button(ctx: Context) -> None:
    _press(ctx, conversation.view_pressed(ctx.update.callback_data))


def invalid_button(ctx: Context) -> None:
    ctx.answer_callback(_("This button is not valid."), alert=True)


# --- reading the update, rendering the answer --------------------------------------------------
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
    return Incoming(
        update_id=ctx.update.update_id,
        chat_id=int(ctx.chat_id or 0),
        user_id=int(ctx.sender.user_id or 0),
        user_name=_display_name(ctx.update.user),
        message_id=message.message_id if message is not None else 0,
        reply_to_message_id=reply_to.message_id if reply_to is not None else None,
        content=content,
        content_error=error,
        is_admin=ctx.sender.is_admin,
    )


def _args(ctx: Context) -> str:
    return ctx.command.args if ctx.command else ""


def _display_name(user: User | None) -> str:
    if user is None:
        return ""
    name = user.full_name.strip()
    if user.username:
        name = f"{name} (@{user.username})".strip()
    return name[:200]


def _say(ctx: Context, says: list[Say]) -> None:
    for say in says:
        sent = ctx.reply(say.text, reply_markup=say.markup)
        if say.ticket is not None:
            delivery.link_admin_message(say.ticket, sent)


def _press(ctx: Context, pressed: Pressed) -> None:
    ctx.answer_callback(pressed.text, alert=pressed.alert)
    if pressed.view is not None:
        text, markup = pressed.view
        try:
            ctx.edit_callback_message(text, reply_markup=markup)
        except TelegramApiError as exc:  # "message is not modified", a deleted message
            log.info("panel edit failed: %s", exc)
    elif pressed.remove_buttons:
        _remove_buttons(ctx)
    _say(ctx, pressed.says)


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
