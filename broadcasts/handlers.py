"""Subscribers on the single update path: ``/start`` in private subscribes (the core answers
it), ``/stop`` opts out, a private ``my_chat_member`` "kicked" (the user blocked the bot)
unsubscribes, ``chat_member`` changes keep the membership segments."""

from __future__ import annotations

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from broadcasts import services
from telegram_bot.pipeline.context import Context
from telegram_bot.pipeline.router import Observer, Route

INSIDE = ("creator", "administrator", "member")


def on_private_message(ctx: Context) -> None:
    """``/start`` subscribes (again); nothing else here is a subscriber's business."""
    command = ctx.update.command()
    message = ctx.update.message
    if command is None or command.name != "start" or message is None:
        return
    user = message.from_user
    if user is None or user.is_bot:
        return
    services.subscriber_start(
        services.Person(
            user_id=user.id,
            first_name=user.first_name,
            username=user.username or "",
            language=user.language_code or "",
        )
    )


def stop(ctx: Context) -> None:
    message = ctx.update.message
    user = message.from_user if message is not None else None
    if user is None:
        return
    services.subscriber_stop(user.id)
    ctx.reply(_("You will get no more broadcasts from this bot. Send /start to subscribe again."))


def on_my_chat_member(ctx: Context) -> None:
    """In a private chat: "kicked" is the user blocking the bot, "member" unblocking it (they
    subscribe again with /start)."""
    change = ctx.update.my_chat_member
    if change is None:
        return
    if change.new_chat_member.status == "kicked":
        services.subscriber_unreachable(change.from_user.id)


def on_chat_member(ctx: Context) -> None:
    change = ctx.update.chat_member
    if change is None:
        return
    member = change.new_chat_member
    restricted = member.status == "restricted"
    is_member = bool(member.is_member) if restricted else member.status in INSIDE
    services.membership_set(chat_id=change.chat.id, user_id=member.user.id, is_member=is_member)


ROUTES: list[Route] = [
    Route.on_command(
        "stop",
        stop,
        help=gettext_lazy("no more broadcasts"),
        chat_types=("private",),
    ),
]
OBSERVERS: list[Observer] = [
    Observer.on(
        "broadcasts.subscribe", "message", on_private_message, chat_types=("private",), order=50
    ),
    Observer.on("broadcasts.blocked", "my_chat_member", on_my_chat_member, chat_types=("private",)),
    Observer.on(
        "broadcasts.members",
        "chat_member",
        on_chat_member,
        chat_types=("group", "supergroup", "channel"),
    ),
]
PANEL_ENTRIES: list[object] = []
