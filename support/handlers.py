"""Telegram handlers of the support desk (thin: read the update, make one call to the tickets
service, render what it returns).

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

from support import delivery, services, staff, topic
from support.services import Incoming, Pressed, Say
from support.validation import Content, check_message_content
from telegram_bot.admins import Role
from telegram_bot.errors import TelegramApiError, ValidationError
from telegram_bot.pipeline.context import Context
from telegram_bot.pipeline.router import QUIET, Foresight, Observer, PanelEntry, Route
from telegram_bot.state import KVStore
from telegram_bot.updates import Update, User

log = logging.getLogger(__name__)


def _from_sender(handler: Callable[[Context, Incoming], None]) -> Callable[[Context], None]:
    """Read the update into ``Incoming`` once, for the handler. Tickets, workflows and answers
    belong to a Telegram user: an update that names none (a message without ``from``) is
    ignored here, never filed under user 0."""

    @wraps(handler)
    def checked(ctx: Context) -> None:
        incoming = _incoming(ctx)
        if incoming is None:
            log.info("update %s: no sender, ignored by support", ctx.update.update_id)
            return
        handler(ctx, incoming)

    return checked


# --- commands --------------------------------------------------------------------------------
@_from_sender
def support_command(ctx: Context, incoming: Incoming) -> None:
    if not ctx.in_private:
        ctx.reply(_("To contact support, send /support to me in a private chat."))
        return
    _say(ctx, services.support_command(incoming, ctx.store))


@_from_sender
def close_command(ctx: Context, incoming: Incoming) -> None:
    _say(ctx, services.close_command(incoming))


# --- plain private messages and workflows ----------------------------------------------------
@_from_sender
def private_message(ctx: Context, incoming: Incoming) -> None:
    """The handler of plain private messages: follow-ups, reopening, admins' replies."""
    _say(ctx, services.private_message(incoming))


@_from_sender
def open_step(ctx: Context, incoming: Incoming) -> None:
    """The one message after ``/support``."""
    _say(ctx, services.open_step(incoming, ctx.store))


@_from_sender
def reply_step(ctx: Context, incoming: Incoming) -> None:
    """The one message after an admin pressed Reply."""
    _say(ctx, services.reply_step(incoming, ctx.store))


# --- buttons ---------------------------------------------------------------------------------
@_from_sender
def reply_button(ctx: Context, incoming: Incoming) -> None:
    _press(ctx, services.reply_pressed(incoming, ctx.update.callback_data, ctx.store))


@_from_sender
def resolve_button(ctx: Context, incoming: Incoming) -> None:
    _press(ctx, services.resolve_pressed(incoming, ctx.update.callback_data))


@_from_sender
def close_button(ctx: Context, incoming: Incoming) -> None:
    _press(ctx, services.close_pressed(incoming, ctx.update.callback_data))


@_from_sender
def rate_button(ctx: Context, incoming: Incoming) -> None:
    _press(ctx, services.rate_pressed(incoming, ctx.update.callback_data))


def list_button(ctx: Context) -> None:
    _press(ctx, services.list_pressed(ctx.update.callback_data))


def view_button(ctx: Context) -> None:
    _press(ctx, services.view_pressed(ctx.update.callback_data))


def invalid_button(ctx: Context) -> None:
    ctx.answer_callback(_("This button is not valid."), alert=True)


# --- the staff group -------------------------------------------------------------------------
def foresee_staff(update: Update, store: KVStore) -> Foresight:
    """Only messages in the staff group's topics are the desk's: every other group message
    keeps the pipeline's one-step path."""
    chat_id = staff.staff_chat_id()
    message = update.message
    if chat_id is None or update.chat_id != chat_id or message is None:
        return QUIET
    if not message.is_topic_message or not message.message_thread_id:
        return QUIET  # the group's General topic: staff talk, no ticket
    return Foresight(acts=True)


def staff_message(ctx: Context) -> None:
    """A message in the staff group: in a ticket's topic, an answer, a note or a command."""
    read = _staff_incoming(ctx)
    if read is None:
        return
    for text in topic.staff_message(read, ctx.client):
        try:
            ctx.reply(text)
        except TelegramApiError as exc:  # the topic went away meanwhile: the work is done
            log.info("update %s: staff group reply failed: %s", ctx.update.update_id, exc)


def _staff_incoming(ctx: Context) -> topic.StaffMessage | None:
    message, user = ctx.update.message, ctx.update.user
    if message is None or user is None or message.is_service:
        return None
    anonymous = message.sender_chat is not None and message.sender_chat.id == message.chat.id
    if user.is_bot and not anonymous:
        return None  # another bot
    command = ctx.command
    content: Content | None = None
    error = ""
    if command is None:
        try:
            content = check_message_content(message)
        except ValidationError as exc:
            error = str(exc.user_message)
    replied = message.reply_to_message
    replied_user = replied.from_user if replied is not None else None
    return topic.StaffMessage(
        update_id=ctx.update.update_id,
        chat_id=message.chat.id,
        thread_id=message.message_thread_id if message.is_topic_message else None,
        message_id=message.message_id,
        user_id=user.id,
        user_name=_display_name(user),
        text=message.text or "",
        command=command.name if command is not None else None,
        args=command.args if command is not None else "",
        content=content,
        content_error=error,
        anonymous=anonymous,
        replied_to=(
            (replied_user.id, _display_name(replied_user))
            if replied_user is not None and not replied_user.is_bot
            else None
        ),
    )


# --- reading the update, rendering the answer --------------------------------------------------
def _incoming(ctx: Context) -> Incoming | None:
    """The update as the desk sees it, each part read once; None when it names no sender."""
    update = ctx.update
    user, chat, message = update.user, update.chat, update.effective_message
    if user is None or chat is None or not ctx.sender.user_id:
        return None
    command = ctx.command
    content: Content | None = None
    error = ""
    if update.message is not None and command is None:
        try:
            content = check_message_content(update.message)
        except ValidationError as exc:
            error = exc.user_message
    reply_to = message.reply_to_message if message is not None else None
    return Incoming(
        update_id=update.update_id,
        chat_id=chat.id,
        user_id=int(ctx.sender.user_id),
        user_name=_display_name(user),
        message_id=message.message_id if message is not None else 0,
        reply_to_message_id=reply_to.message_id if reply_to is not None else None,
        content=content,
        content_error=error,
        args=command.args if command is not None else "",
        # Asked for plain messages and buttons only (a BotAdmin row may be read): commands
        # never use it.
        is_admin=ctx.sender.is_admin if command is None else False,
    )


def _display_name(user: User) -> str:
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
        "new",
        support_command,
        help=gettext_lazy("open another support ticket (/new <your question>)"),
        expensive=True,
        chat_types=("private",),
    ),
    Route.on_command(
        "close",
        close_command,
        help=gettext_lazy("close your support ticket"),
        chat_types=("private",),
    ),
    Route.on_workflow(services.OPEN.name, open_step),
    Route.on_workflow(services.REPLY.name, reply_step, role=Role.ADMIN),
    Route.on_callback("sup:reply:", reply_button, role=Role.ADMIN),
    Route.on_callback("sup:resolve:", resolve_button, role=Role.ADMIN),
    Route.on_callback("sup:list:", list_button, role=Role.ADMIN),
    Route.on_callback("sup:view:", view_button, role=Role.ADMIN),
    Route.on_callback("sup:close:", close_button),
    Route.on_callback("sup:rate:", rate_button),
    Route.on_callback("sup:", invalid_button),
    Route.on_update("message", private_message, chat_types=("private",)),
]
OBSERVERS: list[Observer] = [
    Observer.on(
        "support.staff",
        "message",
        staff_message,
        chat_types=("supergroup",),
        order=50,
        foresee=foresee_staff,
    )
]
PANEL_ENTRIES: list[PanelEntry] = [
    PanelEntry(gettext_lazy("Support tickets"), "sup:list:1", order=10)
]
