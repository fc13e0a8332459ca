"""Telegram handlers of the moderation app: the commands, the admin-cache observer and the
anti-flood observer. Thin: resolve who and what, check rights, call the service, answer one
line naming the target. Refusals change nothing."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from moderation import connections, flood, panel, services, violations
from moderation.conf import chat_settings
from moderation.durations import (
    DurationError,
    describe,
    looks_like_duration,
    parse_duration,
    quoted,
)
from moderation.models import Action, ChatSettings
from moderation.rights import (
    DELETE,
    RESTRICT,
    ChatAdmin,
    Refusal,
    chat_admins,
    check_anonymous,
    check_bot,
    check_moderator,
    forget_chat_admins,
    is_group_id,
    is_protected,
)
from moderation.services import Origin, Target
from telegram_bot import ids
from telegram_bot.admins import GROUP_ANONYMOUS_BOT_ID, Role, role_of, sent_as_the_chat
from telegram_bot.audit import Actor, telegram_actor
from telegram_bot.client.methods import DELETE_BATCH
from telegram_bot.errors import TelegramApiError
from telegram_bot.numbers import ascii_int
from telegram_bot.pipeline.context import Context
from telegram_bot.pipeline.router import Observer, PanelEntry, Route
from telegram_bot.updates import Message

log = logging.getLogger(__name__)
GROUPS = ("group", "supergroup")
# Commands that also work in private, on the group the sender connected to (``/connect``).
CONNECTABLE = (*GROUPS, "private")
PURGE_MAX = 500  # messages one /purge may delete (five deleteMessages calls)


@dataclass
class Request:
    ctx: Context
    message: Message
    chat_id: int
    admins: dict[int, ChatAdmin]
    args: list[str]

    @property
    def origin(self) -> Origin:
        if sent_as_the_chat(self.message):
            actor = Actor(GROUP_ANONYMOUS_BOT_ID, "anonymous admin")
        else:
            actor = telegram_actor(self.ctx.update.user)
        return Origin(self.chat_id, actor, "command", self.ctx.update.update_id)


def moderator_command(
    right: str,
) -> Callable[[Callable[[Request], str]], Callable[[Context], None]]:
    """Wrap a command: admins fetched, the sender's and the bot's rights checked, refusals
    and Telegram errors answered in one line. In a private chat the command applies to the
    group the sender connected to (``/connect``), with their rights there."""

    def wrap(body: Callable[[Request], str]) -> Callable[[Context], None]:
        def handler(ctx: Context) -> None:
            message, command = ctx.update.message, ctx.command
            if message is None or command is None or ctx.chat_id is None:
                return
            try:
                chat_id = _command_chat(ctx, message)
                admins = _admins_of(ctx, message, chat_id)
                if sent_as_the_chat(message):
                    check_anonymous(admins, right)
                else:
                    check_moderator(admins, ctx.sender.user_id, right)
                check_bot(admins, right)
                answer = body(Request(ctx, message, chat_id, admins, command.args.split()))
            except Refusal as refusal:
                answer = str(refusal)
            except TelegramApiError as exc:
                log.info("moderation command /%s: %s", command.name, exc)
                answer = services.explain(exc)
            if answer:
                ctx.reply(answer)

        handler.__name__ = handler.__qualname__ = body.__name__
        return handler

    return wrap


def _command_chat(ctx: Context, message: Message) -> int:
    """The group a command is about: its own chat, or in private the connected group."""
    assert ctx.chat_id is not None
    if message.chat.type != "private":
        return ctx.chat_id
    connected = connections.connected(ctx.sender.user_id)
    if connected is None:
        raise Refusal(
            _("Send that in the group, or connect this chat to it first: /connect in the group.")
        )
    return connected.chat_id


def _admins_of(ctx: Context, message: Message, chat_id: int) -> dict[int, ChatAdmin]:
    admins = chat_admins(ctx.store, ctx.client, chat_id)
    if sent_as_the_chat(message) and not any(a.is_anonymous for a in admins.values()):
        # Only an anonymous admin can write as the chat: the cached list is older than that.
        forget_chat_admins(ctx.store, chat_id)
        admins = chat_admins(ctx.store, ctx.client, chat_id)
    return admins


# -- who -------------------------------------------------------------------------------------

_COMMAND_WORD = re.compile(r"\s*\S+\s+")  # "/ban@bot " before the first argument


def resolve_target(req: Request, *, protect: bool = True) -> Target:
    """The member the command is about (by reply, text mention, @username or id); the args
    left are what follows. Refuses the bot, the owner and admins when ``protect``."""
    reply = _replied(req.message)
    target: Target | None = None
    if reply is not None:
        if reply.is_service:
            raise Refusal(_("That is a service message: reply to something a member wrote."))
        if reply.from_user is None or reply.sender_chat is not None:
            raise Refusal(_("That message was sent on behalf of a chat, not by a member."))
        user = reply.from_user
        target = Target(user.id, user.full_name, user.username or "")
    elif (mentioned := _mention_first(req)) is not None:
        target, req.args = mentioned
    elif req.args:
        target = _target_from_arg(req, req.args[0])
        req.args = req.args[1:]
    if target is None:
        raise Refusal(_("Reply to the member's message, or give their @username or user id."))
    if not ids.is_person(target.user_id):  # a stand-in account (or an id out of range)
        raise Refusal(
            _("That is Telegram's stand-in for an anonymous admin or a channel, not a member.")
            + f" ({target.label})"
        )
    if protect:
        why = is_protected(req.admins, target.user_id)
        if why:
            raise Refusal(f"{why} ({target.label})")
    return target


def _mention_first(req: Request) -> tuple[Target, list[str]] | None:
    """A member picked from the mention menu (a ``text_mention``: one without a username) as
    the command's first argument: them, and the words after the mention (which may hold
    spaces: it shows their name). A mention further on is part of the reason, never the
    target: ``/ban 5005 for harassing Bob`` bans 5005, not Bob."""
    text = req.message.text or ""
    command = _COMMAND_WORD.match(text)
    if command is None:
        return None
    units = text.encode("utf-16-le")  # Telegram's offsets count UTF-16 code units
    start = len(text[: command.end()].encode("utf-16-le")) // 2
    for entity in req.message.entities or []:
        if entity.type == "text_mention" and entity.user is not None and entity.offset == start:
            user = entity.user
            rest = units[2 * (entity.offset + entity.length) :].decode("utf-16-le", "replace")
            return Target(user.id, user.full_name, user.username or ""), rest.split()
    return None


def _target_from_arg(req: Request, arg: str) -> Target:
    if arg and arg[0] in "0123456789-+":
        try:  # the one check of user ids (1..2**52-1, ASCII digits: not "²")
            return Target(ids.parse_user_id(arg))
        except ids.IdError:
            raise Refusal(_("%(arg)s is not a Telegram user id.") % {"arg": quoted(arg)}) from None
    if arg.startswith("@") and len(arg) > 1:
        name = arg[1:]
        for admin in req.admins.values():
            if admin.username and admin.username == name.lower():
                return Target(admin.user_id, username=name)
        known = services.known_username(req.chat_id, name)
        if known is not None:
            return known
        raise Refusal(
            _("I don't know %(arg)s here: reply to one of their messages or use their id.")
            % {"arg": quoted(arg)}
        )
    raise Refusal(
        _("%(arg)s is not a member: reply to their message, or give @username or id.")
        % {"arg": quoted(arg)}
    )


def _replied(message: Message) -> Message | None:
    """The message a command replies to; None for a forum topic's creation message, which
    every message of the topic "replies" to (a bare /purge there deleted the chat's messages
    of every topic from the topic's creation on)."""
    reply = message.reply_to_message
    return None if reply is None or _is_topic_root(reply) else reply


def _is_topic_root(reply: Message) -> bool:
    # In forums every message "replies" to its topic's creation message: not a target.
    return bool((reply.model_extra or {}).get("forum_topic_created"))


def _duration_and_reason(req: Request) -> tuple[int | None, str]:
    seconds = None
    if req.args and looks_like_duration(req.args[0]):
        try:
            seconds = parse_duration(req.args[0])
        except DurationError as exc:
            raise Refusal(str(exc)) from None
        req.args = req.args[1:]
    return seconds, " ".join(req.args)[:300]


# -- commands --------------------------------------------------------------------------------


def _penalty(
    action: str, *, duration: bool = False, reason: bool = False
) -> Callable[[Context], None]:
    """The command of one penalty: the target, then a duration and a reason when it takes
    them."""

    def body(req: Request) -> str:
        target = resolve_target(req)
        seconds, why = None, ""
        if duration:
            seconds, why = _duration_and_reason(req)
        elif reason:
            why = " ".join(req.args)[:300]
        return services.penalize(
            req.ctx.client,
            origin=req.origin,
            action=action,
            target=target,
            seconds=seconds,
            reason=why,
        )

    body.__name__ = action
    return moderator_command(RESTRICT)(body)


mute = _penalty("mute", duration=True)
unmute = _penalty("unmute")
ban = _penalty("ban", duration=True)
unban = _penalty("unban")
kick = _penalty("kick", reason=True)


@moderator_command(RESTRICT)
def warn(req: Request) -> str:
    target = resolve_target(req)
    reason = " ".join(req.args)[:300]
    return services.warn_and_act(req.ctx.client, req.origin, target, reason)


@moderator_command(RESTRICT)
def unwarn(req: Request) -> str:
    target = resolve_target(req, protect=False)
    if services.unwarn(origin=req.origin, target=target):
        left = len(services.warnings_of(req.chat_id, target.user_id))
        return _("Removed a warning of %(name)s (%(left)s left).") % {
            "name": target.label,
            "left": left,
        }
    return _("%(name)s has no warnings.") % {"name": target.label}


@moderator_command(RESTRICT)
def warns(req: Request) -> str:
    target = resolve_target(req, protect=False)
    active = services.warnings_of(req.chat_id, target.user_id)
    limit = chat_settings(req.chat_id).warn_limit
    if not active:
        return _("%(name)s has no warnings.") % {"name": target.label}
    reasons = "; ".join(w.reason or _("no reason") for w in active[:5])
    return _("%(name)s has %(count)s/%(limit)s warnings: %(reasons)s") % {
        "name": target.label,
        "count": len(active),
        "limit": limit,
        "reasons": reasons,
    }


@moderator_command(RESTRICT)
def resetwarns(req: Request) -> str:
    target = resolve_target(req, protect=False)
    count = services.resetwarns(origin=req.origin, target=target)
    if not count:
        return _("%(name)s has no warnings.") % {"name": target.label}
    return ngettext(
        "Removed %(count)d warning of %(name)s.", "Removed %(count)d warnings of %(name)s.", count
    ) % {"count": count, "name": target.label}


@moderator_command(RESTRICT)
def warnlimit(req: Request) -> str:
    """``/warnlimit`` says the limit; ``/warnlimit N`` sets it (1-20)."""
    if not req.args:
        row = chat_settings(req.chat_id)
        return _("Warning limit: %(limit)s, then %(action)s %(duration)s.") % {
            "limit": row.warn_limit,
            "action": row.get_warn_action_display(),
            "duration": describe(row.warn_action_seconds),
        }
    limit = ascii_int(req.args[0], digits=2)
    if limit is None or not 1 <= limit <= services.WARN_LIMIT_MAX:
        raise Refusal(
            _("The limit is a number from 1 to %(most)s.") % {"most": services.WARN_LIMIT_MAX}
        )
    _warn_settings(req, {"warn_limit": limit})
    return _("Warning limit set to %(limit)s.") % {"limit": limit}


WARN_MODES = {
    "mute": Action.MUTE,
    "tmute": Action.MUTE,
    "ban": Action.BAN,
    "tban": Action.BAN,
    "kick": Action.KICK,
}


@moderator_command(RESTRICT)
def warnmode(req: Request) -> str:
    """``/warnmode mute|ban|kick [duration]``: the action at the warning limit."""
    action = WARN_MODES.get(req.args[0].lower()) if req.args else None
    if action is None:
        raise Refusal(_("Say what happens at the limit: /warnmode mute|ban|kick [duration]."))
    values: dict[str, object] = {"warn_action": action}
    if len(req.args) > 1:
        try:
            values["warn_action_seconds"] = parse_duration(req.args[1])
        except DurationError as exc:
            raise Refusal(str(exc)) from None
    row = _warn_settings(req, values)
    return _("At the limit: %(action)s %(duration)s.") % {
        "action": row.get_warn_action_display(),
        "duration": describe(row.warn_action_seconds),
    }


@moderator_command(RESTRICT)
def warntime(req: Request) -> str:
    """``/warntime 30d``: warnings stop counting after this many days (1-365)."""
    seconds = None
    if req.args:
        try:
            seconds = parse_duration(req.args[0])
        except DurationError:
            seconds = None
    days, rest = divmod(seconds or 0, 86400)
    if not req.args or rest or not 1 <= days <= 365:
        raise Refusal(_("Give whole days from 1d to 365d, e.g. /warntime 30d."))
    _warn_settings(req, {"warn_expiry_days": days})
    return ngettext(
        "Warnings now expire after %(count)d day.",
        "Warnings now expire after %(count)d days.",
        days,
    ) % {"count": days}


def _warn_settings(req: Request, values: dict[str, object]) -> ChatSettings:
    try:
        return services.warn_settings_set(
            chat_id=req.chat_id,
            values=values,
            actor=req.origin.actor,
            update_id=req.ctx.update.update_id,
        )
    except ValidationError as exc:
        raise Refusal(" ".join(exc.messages)[:300]) from None


@moderator_command(DELETE)
def delete(req: Request) -> str:
    reply = _replied(req.message)
    if reply is None:
        raise Refusal(_("Reply to the message to delete."))
    req.ctx.client.delete_messages(
        chat_id=req.chat_id, message_ids=[reply.message_id, req.message.message_id]
    )
    _audit_delete(req, "del", 1, reply)
    return ""


@moderator_command(DELETE)
def purge(req: Request) -> str:
    reply = _replied(req.message)
    if reply is None:
        raise Refusal(_("Reply to the first message to delete; /purge deletes from there on."))
    first, last = reply.message_id, req.message.message_id
    if not (ids.is_message_id(first) and ids.is_message_id(last)) or first >= last:
        # Telegram numbers a chat's messages upwards: the command comes after what it purges.
        raise Refusal(_("Reply to an earlier message: /purge deletes from there on."))
    if last - first + 1 > PURGE_MAX:
        raise Refusal(
            _("At most %(count)s messages at once: reply to a later message.")
            % {"count": PURGE_MAX}
        )
    message_ids = list(range(first, last + 1))
    for start in range(0, len(message_ids), DELETE_BATCH):
        req.ctx.client.delete_messages(
            chat_id=req.chat_id, message_ids=message_ids[start : start + DELETE_BATCH]
        )
    _audit_delete(req, "purge", len(message_ids) - 1, reply)
    return ""


def _audit_delete(req: Request, action: str, count: int, reply: Message) -> None:
    author = reply.from_user
    services.record(
        action=action,
        actor=req.origin.actor,
        source="command",
        chat_id=req.chat_id,
        target_id=author.id if author else None,
        target_name=author.full_name if author else "",
        detail=f"{count} message(s) from #{reply.message_id}",
        update_id=req.ctx.update.update_id,
    )


# -- observers -------------------------------------------------------------------------------

ADMIN_STATUSES = frozenset({"creator", "administrator"})


def on_member_change(ctx: Context) -> None:
    """Someone became or stopped being an admin (or changed rights): drop the cached list."""
    change = ctx.update.chat_member or ctx.update.my_chat_member
    if change is None:
        return
    old, new = change.old_chat_member, change.new_chat_member
    if old.status in ADMIN_STATUSES or new.status in ADMIN_STATUSES:
        forget_chat_admins(ctx.store, change.chat.id)


# -- panel -----------------------------------------------------------------------------------


def panel_button(ctx: Context) -> None:
    try:
        page, chat_id, field, value = panel.parse(ctx.update.callback_data)
    except ValueError:
        ctx.answer_callback_quietly(_("This button is not valid."), alert=True)
        return
    if page == "chats":
        text, markup = panel.chats_view()
    else:
        assert chat_id is not None
        if page == "set":
            user = ctx.update.user
            actor = Actor(user.id if user else None, user.full_name if user else "")
            try:
                row = services.settings_set(
                    chat_id=chat_id,
                    field=field,
                    value=value,
                    actor=actor,
                    update_id=ctx.update.update_id,
                )
            except ValueError:
                ctx.answer_callback_quietly(_("This button is not valid."), alert=True)
                return
        else:
            row = services.settings_for_edit(chat_id)
        text, markup = panel.chat_view(row)
    ctx.answer_callback_quietly(None)
    try:
        ctx.edit_callback_message(text, reply_markup=markup)
    except TelegramApiError as exc:  # "message is not modified" after a double press
        log.info("moderation panel not updated: %s", exc)


# -- connections -----------------------------------------------------------------------------


def connect(ctx: Context) -> None:
    """``/connect`` in a group by its admin, or ``/connect <group id>`` in private."""
    message, command, user = ctx.update.message, ctx.command, ctx.update.user
    if message is None or command is None or user is None or ctx.chat_id is None:
        return
    if message.chat.type == "private":
        word = command.args.strip()
        if not word:
            current = connections.connected(user.id)
            ctx.reply(
                _("Send /connect in the group to set up from here, or /connect <group id>.")
                if current is None
                else _("Connected to %(chat)s: /disconnect ends it.")
                % {"chat": current.chat_title or current.chat_id}
            )
            return
        try:
            chat_id = int(word)
        except ValueError:
            chat_id = 0
        if not is_group_id(chat_id):
            ctx.reply(_("%(word)s is not a group id (they start with -).") % {"word": quoted(word)})
            return
        title = ""
    else:
        chat_id, title = ctx.chat_id, message.chat.title or ""
    try:
        admins = chat_admins(ctx.store, ctx.client, chat_id)
    except TelegramApiError as exc:
        log.info("/connect %s: %s", chat_id, exc)
        ctx.reply(_("I can't see that group: add me to it first."))
        return
    if user.id not in admins and role_of(user.id) < Role.ADMIN:
        ctx.reply(_("Only the chat's admins can do that."))
        return
    connections.connect(user.id, chat_id, title)
    ctx.reply(
        _(
            "Connected: the commands you send me in private now apply to %(chat)s "
            "(/disconnect ends it)."
        )
        % {"chat": title or chat_id}
    )


def disconnect(ctx: Context) -> None:
    user = ctx.update.user
    if user is None:
        return
    if connections.disconnect(user.id):
        ctx.reply(_("Disconnected."))
    else:
        ctx.reply(_("You were not connected to a group."))


ROUTES: list[Route] = [
    Route.on_command(
        "connect",
        connect,
        help=gettext_lazy("(in a group, or <group id> in private): set the group up from private"),
        chat_types=CONNECTABLE,
    ),
    Route.on_command(
        "disconnect",
        disconnect,
        help=gettext_lazy("end the connection to a group"),
        chat_types=("private",),
    ),
    Route.on_command(
        "warn",
        warn,
        help=gettext_lazy("(reply or @user/id) [reason]: warn a member"),
        chat_types=CONNECTABLE,
    ),
    Route.on_command(
        "unwarn",
        unwarn,
        help=gettext_lazy("(reply or @user/id): remove a warning"),
        chat_types=CONNECTABLE,
    ),
    Route.on_command(
        "warns",
        warns,
        help=gettext_lazy("(reply or @user/id): a member's warnings"),
        chat_types=CONNECTABLE,
    ),
    Route.on_command(
        "resetwarns",
        resetwarns,
        help=gettext_lazy("(reply or @user/id): remove all of a member's warnings"),
        chat_types=CONNECTABLE,
    ),
    Route.on_command(
        "warnlimit",
        warnlimit,
        help=gettext_lazy("[1-20]: the warning limit"),
        chat_types=CONNECTABLE,
    ),
    Route.on_command(
        "warnmode",
        warnmode,
        help=gettext_lazy("mute|ban|kick [duration]: the action at the warning limit"),
        chat_types=CONNECTABLE,
    ),
    Route.on_command(
        "warntime",
        warntime,
        help=gettext_lazy("<days, e.g. 30d>: when warnings expire"),
        chat_types=CONNECTABLE,
    ),
    Route.on_command(
        "mute",
        mute,
        help=gettext_lazy("(reply or @user/id) [30m|2h|7d] [reason]"),
        chat_types=CONNECTABLE,
    ),
    Route.on_command(
        "unmute",
        unmute,
        help=gettext_lazy("(reply or @user/id): let a member write"),
        chat_types=CONNECTABLE,
    ),
    Route.on_command(
        "ban",
        ban,
        help=gettext_lazy("(reply or @user/id) [duration] [reason]"),
        chat_types=CONNECTABLE,
    ),
    Route.on_command(
        "unban", unban, help=gettext_lazy("(reply or @user/id): lift a ban"), chat_types=CONNECTABLE
    ),
    Route.on_command(
        "kick",
        kick,
        help=gettext_lazy("(reply or @user/id): remove a member"),
        chat_types=CONNECTABLE,
    ),
    Route.on_command(
        "del", delete, help=gettext_lazy("(reply): delete a message"), chat_types=GROUPS
    ),
    Route.on_command(
        "purge", purge, help=gettext_lazy("(reply): delete from there on"), chat_types=GROUPS
    ),
    Route.on_callback("mod:", panel_button, role=Role.ADMIN),
]
OBSERVERS: list[Observer] = [
    Observer.on("mod.admins", "chat_member", on_member_change, chat_types=GROUPS),
    Observer.on("mod.admins-self", "my_chat_member", on_member_change, chat_types=GROUPS),
    Observer.on(
        "mod.flood",
        "message",
        flood.check_flood,
        chat_types=GROUPS,
        order=100,
        foresee=flood.foresee_flood,
    ),
    Observer.on(
        "mod.violations",
        "message",
        violations.act_on_violations,
        chat_types=GROUPS,
        order=110,
        foresee=violations.foresee_violations,
    ),
    Observer.on(
        "mod.violations-edit",
        "edited_message",
        violations.act_on_violations,
        chat_types=GROUPS,
        order=110,
        foresee=violations.foresee_violations,
    ),
]
PANEL_ENTRIES: list[PanelEntry] = [PanelEntry(gettext_lazy("Moderation"), "mod:p", order=250)]
