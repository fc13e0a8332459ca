"""Telegram handlers of the chat rules: the commands (Rose's names and argument forms) and the
observers that enforce them on new and edited messages. Thin: parse, check rights (moderation's
``moderator_command``), call the service, answer one line; refusals change nothing."""

from __future__ import annotations

import logging
import re

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from moderation.durations import DurationError, looks_like_duration, parse_duration, quoted
from moderation.handlers import CONNECTABLE, GROUPS, Request, moderator_command, resolve_target
from moderation.models import Action
from moderation.rights import (
    DELETE,
    RESTRICT,
    Refusal,
    chat_admins,
    is_group_id,
    is_member_message,
    is_protected,
)
from moderation.rules import answers, blocklist, fedban, kinds, matcher, reports, services
from moderation.rules.matcher import Verdict
from moderation.rules.models import AllowedDomain, Approval, BanList, BlocklistEntry, Lock
from moderation.rules.services import Change, RulesError
from moderation.services import Target, explain
from telegram_bot.admins import Role, role_of
from telegram_bot.audit import telegram_actor
from telegram_bot.bot import bot_id
from telegram_bot.errors import TelegramApiError
from telegram_bot.pipeline.context import Context
from telegram_bot.pipeline.router import QUIET, Foresight, Observer, Route
from telegram_bot.state import KVStore
from telegram_bot.updates import Message, Update, User

log = logging.getLogger(__name__)
ACTION_WORDS = {
    "delete": Action.DELETE,
    "del": Action.DELETE,
    "warn": Action.WARN,
    "mute": Action.MUTE,
    "tmute": Action.MUTE,
    "ban": Action.BAN,
    "tban": Action.BAN,
}
LIST_MAX = 50  # lines a listing shows
LOCK_MESSAGE_MAX = 500


def _change(req: Request) -> Change:
    return Change(req.chat_id, req.origin.actor, "command", req.ctx.update.update_id)


def _action(words: list[str]) -> tuple[str, int | None]:
    """``[delete|warn|mute|ban] [duration]`` (delete when empty); Refusal on anything else."""
    if not words:
        return Action.DELETE, None
    action = ACTION_WORDS.get(words[0].lower())
    if action is None:
        raise Refusal(
            _("%(word)s is not an action: delete, warn, mute or ban (with a duration).")
            % {"word": quoted(words[0])}
        )
    rest = words[1:]
    seconds = None
    if rest and action in (Action.MUTE, Action.BAN):
        if not looks_like_duration(rest[0]):
            raise Refusal(_("%(word)s is not a duration.") % {"word": quoted(rest[0])})
        try:
            seconds = parse_duration(rest[0])
        except DurationError as exc:
            raise Refusal(str(exc)) from None
        rest = rest[1:]
    if rest:
        raise Refusal(
            _("Too many words after the action: %(rest)s") % {"rest": quoted(" ".join(rest))}
        )
    return action, seconds


def _described(action: str, seconds: int | None) -> str:
    names: dict[str, str] = {
        Action.DELETE: _("delete"),
        Action.WARN: _("delete and warn"),
        Action.MUTE: _("delete and mute"),
        Action.BAN: _("delete and ban"),
    }
    text = names.get(action, action)
    return text + (f" ({seconds // 60}m)" if seconds else "")


# -- locks ------------------------------------------------------------------------------------


@moderator_command(DELETE)
def lock(req: Request) -> str:
    """``/lock <kind>... [delete|warn|mute|ban] [duration]``."""
    named: list[str] = []
    args = list(req.args)
    while args and kinds.kind_named(args[0]) is not None:
        named.append(kinds.kind_named(args.pop(0)) or "")
    if not named:
        if args:
            raise Refusal(_("%(word)s is not a lock: see /locktypes.") % {"word": quoted(args[0])})
        raise Refusal(_("Say what to lock, e.g. /lock url (see /locktypes)."))
    action, seconds = _action(args)
    named = list(dict.fromkeys(named))
    services.lock_set(_change(req), kinds=named, action=action, seconds=seconds)
    return _("Locked %(kinds)s: %(action)s.") % {
        "kinds": ", ".join(named),
        "action": _described(action, seconds),
    }


@moderator_command(DELETE)
def lockmessage(req: Request) -> str:
    """``/lockmessage <kind> [text]``: what the lock says when it deletes a message ({first}:
    the member's first name); without a text, it says nothing again."""
    command = req.ctx.command
    raw = command.args.strip() if command is not None else ""
    word, _sep, text = raw.partition(" ")
    kind = kinds.kind_named(word) if word else None
    if kind is None:
        raise Refusal(_("Say which lock and what it says, e.g. /lockmessage url No links here."))
    text = " ".join(text.split())
    if len(text) > LOCK_MESSAGE_MAX:
        raise Refusal(
            _("A lock's message is at most %(max)d characters.") % {"max": LOCK_MESSAGE_MAX}
        )
    if not Lock.objects.filter(chat_id=req.chat_id, kind=kind).exists():
        raise Refusal(_("%(kind)s is not locked here: /lock %(kind)s first.") % {"kind": kind})
    services.lock_message_set(_change(req), kind=kind, message=text)
    if not text:
        return _("The %(kind)s lock deletes without a word.") % {"kind": kind}
    return _("The %(kind)s lock now says: %(text)s") % {"kind": kind, "text": text}


@moderator_command(DELETE)
def unlock(req: Request) -> str:
    if not req.args:
        raise Refusal(_("Say what to unlock, e.g. /unlock url."))
    named = []
    for word in req.args:
        kind = kinds.kind_named(word)
        if kind is None:
            raise Refusal(_("%(word)s is not a lock: see /locktypes.") % {"word": quoted(word)})
        named.append(kind)
    removed = services.lock_remove(_change(req), kinds=list(dict.fromkeys(named)))
    if not removed:
        return _("That was not locked.")
    return _("Unlocked %(kinds)s.") % {"kinds": ", ".join(removed)}


@moderator_command(DELETE)
def locks(req: Request) -> str:
    rows = list(
        Lock.objects.filter(chat_id=req.chat_id).values_list("kind", "action", "seconds", "message")
    )
    if not rows:
        return _("Nothing is locked here.")
    lines = [
        f"- {kind}: {_described(action, seconds)}" + (f" «{said}»" if said else "")
        for kind, action, seconds, said in rows
    ]
    domains = list(
        AllowedDomain.objects.filter(chat_id=req.chat_id).values_list("domain", flat=True)
    )
    text = _("Locked here:") + "\n" + "\n".join(lines)
    if domains:
        text += "\n" + _("Links allowed to: %(domains)s") % {"domains": ", ".join(domains)}
    return text


def locktypes(ctx: Context) -> None:
    lines = [f"- {kind}: {kinds.label(kind)}" for kind in kinds.KINDS]
    ctx.reply(_("Kinds of lock:") + "\n" + "\n".join(lines))


@moderator_command(DELETE)
def allowlist(req: Request) -> str:
    """``/allowlist`` lists; ``/allowlist example.com ...`` adds."""
    if not req.args:
        domains = list(
            AllowedDomain.objects.filter(chat_id=req.chat_id).values_list("domain", flat=True)
        )
        if not domains:
            return _("No link domain is allowed here: /allowlist example.com adds one.")
        return _("Links allowed to: %(domains)s") % {"domains": ", ".join(domains)}
    domains = list(dict.fromkeys(_domain(word) for word in req.args[:20]))
    try:
        services.domain_add(_change(req), domains=domains)
    except RulesError as exc:
        return str(exc)
    return _("Links to %(domains)s are allowed.") % {"domains": ", ".join(domains)}


@moderator_command(DELETE)
def rmallowlist(req: Request) -> str:
    if not req.args:
        raise Refusal(_("Say which domain, e.g. /rmallowlist example.com."))
    domains = list(dict.fromkeys(_domain(word) for word in req.args[:20]))
    removed = services.domain_remove(_change(req), domains=domains)
    if not removed:
        return _("That domain was not allowed.")
    return _("Links to %(domains)s are no longer allowed.") % {"domains": ", ".join(removed)}


def _domain(word: str) -> str:
    host = kinds.host_of(word.strip().lower())
    labels = host.split(".")
    if (
        len(host) > 253
        or len(labels) < 2
        or not all(label and len(label) <= 63 for label in labels)
        or not all(ch.isalnum() or ch in "-." for ch in host)
    ):
        raise Refusal(_("%(word)s is not a domain.") % {"word": quoted(word)})
    return host


# -- blocklist --------------------------------------------------------------------------------


def _pattern_and_rest(req: Request) -> tuple[str, list[str]]:
    """A quoted phrase (``"free money"``) or one word, then the words after it."""
    command = req.ctx.command
    args = command.args if command is not None else ""
    if args[:1] in ('"', "“", "«"):
        closing = {'"': '"', "“": "”", "«": "»"}[args[0]]
        end = args.find(closing, 1)
        if end < 0:
            raise Refusal(_("The phrase has no closing quote."))
        pattern, rest = args[1:end], args[end + 1 :].split()
    else:
        words = args.split()
        pattern, rest = (words[0], words[1:]) if words else ("", [])
    if not pattern.strip():
        raise Refusal(
            _('Say what to block: a word, or a phrase in quotes: /addblocklist "free money".')
        )
    try:
        return blocklist.normalise(pattern), rest
    except blocklist.PatternError as exc:
        raise Refusal(f"{quoted(pattern)}: {exc}") from None


@moderator_command(DELETE)
def addblocklist(req: Request) -> str:
    """``/addblocklist word|"a phrase" [delete|warn|mute|ban] [duration]``."""
    pattern, rest = _pattern_and_rest(req)
    action, seconds = _action(rest)
    try:
        services.blocklist_add(_change(req), pattern=pattern, action=action, seconds=seconds)
    except RulesError as exc:
        return str(exc)
    return _("Blocked %(pattern)s: %(action)s.") % {
        "pattern": quoted(pattern),
        "action": _described(action, seconds),
    }


@moderator_command(DELETE)
def rmblocklist(req: Request) -> str:
    pattern, rest = _pattern_and_rest(req)
    if rest:  # an unquoted phrase: the whole of it
        try:
            pattern = blocklist.normalise(" ".join([pattern, *rest]))
        except blocklist.PatternError as exc:
            raise Refusal(str(exc)) from None
    if services.blocklist_remove(_change(req), pattern=pattern):
        return _("%(pattern)s is no longer blocked.") % {"pattern": quoted(pattern)}
    return _("%(pattern)s was not on the blocklist.") % {"pattern": quoted(pattern)}


@moderator_command(DELETE)
def blocklist_command(req: Request) -> str:
    rows = BlocklistEntry.objects.filter(chat_id=req.chat_id).values_list(
        "pattern", "action", "seconds"
    )
    total = rows.count()
    if not total:
        return _("The blocklist is empty here.")
    lines = [f"- {p}: {_described(a, s)}" for p, a, s in rows[:LIST_MAX]]
    text = _("Blocklist (%(count)s):") % {"count": total} + "\n" + "\n".join(lines)
    return text + ("\n…" if total > LIST_MAX else "")


# -- approvals --------------------------------------------------------------------------------


@moderator_command(RESTRICT)
def approve(req: Request) -> str:
    target = resolve_target(req)
    if services.approve(_change(req), target=target):
        return _(
            "%(name)s is approved: locks, blocklists, anti-flood and captcha no longer "
            "apply to them."
        ) % {"name": target.label}
    return _("%(name)s is approved already.") % {"name": target.label}


@moderator_command(RESTRICT)
def unapprove(req: Request) -> str:
    target = resolve_target(req, protect=False)
    if services.unapprove(_change(req), target=target):
        return _("%(name)s is no longer approved.") % {"name": target.label}
    return _("%(name)s was not approved.") % {"name": target.label}


@moderator_command(RESTRICT)
def approved(req: Request) -> str:
    rows = Approval.objects.filter(chat_id=req.chat_id).values_list("user_id", "name")
    total = rows.count()
    if not total:
        return _("Nobody is approved here.")
    lines = [f"- {name or user_id} ({user_id})" for user_id, name in rows[:LIST_MAX]]
    text = _("Approved members (%(count)s):") % {"count": total} + "\n" + "\n".join(lines)
    return text + ("\n…" if total > LIST_MAX else "")


# -- enforcement ------------------------------------------------------------------------------


def _message(update: Update) -> Message | None:
    """The new or edited message a rule applies to (not a command)."""
    if update.chat_id is None or not is_group_id(update.chat_id):
        return None
    if update.message is not None:
        return None if update.command() is not None else update.message
    return update.edited_message


def _verdict(update: Update) -> Verdict | None:
    message = _message(update)
    if message is None or update.chat_id is None:
        return None
    return matcher.member_verdict(update.chat_id, message)


def foresee_rules(update: Update, store: KVStore) -> Foresight | None:
    """Quiet for a message that breaks none of its chat's rules (``Observer.foresee``)."""
    if _verdict(update) is not None or _bots_added(update):
        return None
    return QUIET


def enforce(ctx: Context) -> None:
    """A new or edited member's message that breaks a rule: deleted, and the rule's action
    taken on its author; admins (and approved members: ``member_verdict``) are exempt."""
    if _bots_added(ctx.update):
        _kick_bots(ctx)
        return
    verdict = _verdict(ctx.update)
    message = _message(ctx.update)
    if verdict is None or message is None or message.from_user is None or ctx.chat_id is None:
        return
    user = message.from_user
    target = Target(user.id, user.full_name, user.username or "")
    try:
        if is_protected(chat_admins(ctx.store, ctx.client, ctx.chat_id), user.id):
            return
        answer = services.rule_enforce(
            ctx.client,
            chat_id=ctx.chat_id,
            update_id=ctx.update.update_id,
            message_id=message.message_id,
            target=target,
            verdict=verdict,
        )
    except TelegramApiError as exc:
        answer = explain(exc, target)
    if verdict.message:
        said = verdict.message.replace("{first}", user.first_name or "")
        answer = f"{said}\n{answer}" if answer else said
    if answer:
        ctx.reply(answer)


def _bots_added(update: Update) -> list[Target]:
    """Bots a member (not the bot itself) added, in a chat whose ``bots`` lock is on."""
    message = update.message
    if message is None or not message.new_chat_members or update.chat_id is None:
        return []
    if not is_group_id(update.chat_id) or "bots" not in matcher.rules_of(update.chat_id).locks:
        return []
    adder = message.from_user
    if adder is None or adder.is_bot or adder.id in matcher.rules_of(update.chat_id).approved:
        return []
    me = bot_id()
    return [
        Target(user.id, user.full_name, user.username or "")
        for user in message.new_chat_members
        if user.is_bot and user.id != me and user.id != adder.id
    ]


def _kick_bots(ctx: Context) -> None:
    bots = _bots_added(ctx.update)
    message = ctx.update.message
    if not bots or message is None or message.from_user is None or ctx.chat_id is None:
        return
    try:
        if is_protected(chat_admins(ctx.store, ctx.client, ctx.chat_id), message.from_user.id):
            return  # an admin may add bots
        answer = services.bots_kick(
            ctx.client, chat_id=ctx.chat_id, update_id=ctx.update.update_id, bots=bots
        )
    except TelegramApiError as exc:
        answer = explain(exc)
    if answer:
        ctx.reply(answer)


# -- reports ----------------------------------------------------------------------------------

ADMIN_MENTION = re.compile(r"(?:^|\s)@admins?\b", re.IGNORECASE)


def report_command(ctx: Context) -> None:
    """``/report`` in reply to a member's message."""
    answer = _report(ctx, quiet=False)
    if answer:
        ctx.reply(answer)


def foresee_report_mention(update: Update, store: KVStore) -> Foresight | None:
    """Quiet for every message but a reply that calls ``@admin``."""
    message = update.message
    if message is None or message.reply_to_message is None:
        return QUIET
    return None if ADMIN_MENTION.search(message.text_or_caption) else QUIET


def report_mention(ctx: Context) -> None:
    """``@admin`` (or ``@admins``) in a reply: a report, as ``/report``."""
    message = ctx.update.message
    if message is None or not ADMIN_MENTION.search(message.text_or_caption):
        return
    answer = _report(ctx, quiet=True)
    if answer:
        ctx.reply(answer)


def _report(ctx: Context, *, quiet: bool) -> str:
    message = ctx.update.message
    if message is None or ctx.chat_id is None or not is_member_message(message):
        return ""
    reply = message.reply_to_message
    if reply is None or (reply.model_extra or {}).get("forum_topic_created"):
        return "" if quiet else _("Reply to the message you want to report with /report.")
    if not reports.reports_enabled(ctx.chat_id):
        return "" if quiet else _("Reports are off in this chat.")
    if not is_member_message(reply) or reply.from_user is None:
        return _("Only a member's own message can be reported.")
    author, reporter = reply.from_user, ctx.update.user
    assert reporter is not None
    if author.id == reporter.id:
        return _("You can't report your own message.")
    admins = chat_admins(ctx.store, ctx.client, ctx.chat_id)
    if reporter.id in admins:
        return _("You are an admin here: act on it yourself (/del, /warn, /mute, /ban).")
    if is_protected(admins, author.id):
        return _("Admins' messages can't be reported.")
    excerpt = reply.text_or_caption or _("(a message without text)")
    return reports.report(
        ctx.client,
        ctx.store,
        reports.Reported(
            chat_id=ctx.chat_id,
            chat_title=message.chat.title or "",
            message_id=reply.message_id,
            target=Target(author.id, author.full_name, author.username or ""),
            excerpt=excerpt,
            reporter=telegram_actor(reporter),
            update_id=ctx.update.update_id,
        ),
    )


def reports_in_group(ctx: Context) -> None:
    """``/reports [on|off]`` in a group: whether members can report here (admins change it)."""
    command = ctx.command
    if ctx.chat_id is None or command is None:
        return
    word = command.args.strip().lower()
    if not word:
        on = reports.reports_enabled(ctx.chat_id)
        ctx.reply(_("Reports are on in this chat.") if on else _("Reports are off in this chat."))
        return
    _reports_switch(ctx)


@moderator_command(DELETE)
def _reports_switch(req: Request) -> str:
    word = " ".join(req.args).lower()
    if word not in ("on", "off", "yes", "no"):
        raise Refusal(_("Say /reports on or /reports off."))
    on = word in ("on", "yes")
    reports.reports_set(req.chat_id, on, actor=req.origin.actor, update_id=req.origin.update_id)
    return _("Members can report messages here.") if on else _("Reports are off in this chat.")


def reports_in_private(ctx: Context) -> None:
    """``/reports [on|off]`` in private: whether this admin gets reports."""
    command, user = ctx.command, ctx.update.user
    if command is None or user is None:
        return
    word = command.args.strip().lower()
    if word in ("on", "yes"):
        reports.opt_in(user.id, True)
        ctx.reply(_("You will get reports from the chats where you are an admin."))
    elif word in ("off", "no"):
        reports.opt_in(user.id, False)
        ctx.reply(_("You will no longer get reports."))
    elif not word:
        if reports.opted_in(user.id):
            ctx.reply(
                _("You get reports from the chats where you are an admin: /reports off stops them.")
            )
        else:
            ctx.reply(_("You don't get reports: /reports on, if you are an admin of a chat."))
    else:
        ctx.reply(_("Say /reports on or /reports off."))


def report_button(ctx: Context) -> None:
    """A decision on a report's notice."""
    user = ctx.update.user
    try:
        report_id, letter = reports.parse(ctx.update.callback_data)
    except ValueError:
        ctx.answer_callback_quietly(_("This button is not valid."), alert=True)
        return
    if user is None:
        return
    pressed = reports.decide(
        ctx.client,
        ctx.store,
        report_id=report_id,
        letter=letter,
        actor=telegram_actor(user),
        update_id=ctx.update.update_id,
    )
    ctx.answer_callback_quietly(pressed.text, alert=pressed.alert)
    if pressed.case is not None:
        try:
            ctx.edit_callback_message(reports.notice_text(pressed.case))
        except TelegramApiError as exc:  # "message is not modified" after a double press
            log.info("report notice not updated: %s", exc)


# -- shared ban lists (Rose's federations) ----------------------------------------------------


def newfed(ctx: Context) -> None:
    """``/newfed <name>`` in private: a new shared ban list, owned by the sender."""
    command, user = ctx.command, ctx.update.user
    if command is None or user is None:
        return
    name = " ".join(command.args.split())
    if not name or len(name) > 64:
        ctx.reply(_("Give the list a name of 1 to 64 characters: /newfed My groups."))
        return
    if BanList.objects.filter(owner_id=user.id).count() >= fedban.MAX_LISTS_PER_OWNER:
        ctx.reply(_("You own %(count)d lists already.") % {"count": fedban.MAX_LISTS_PER_OWNER})
        return
    ban_list = fedban.list_create(user.id, name)
    ctx.reply(
        _(
            "Created the shared ban list %(name)s (id %(id)d). In each group of yours that "
            "should share it, send /joinfed %(id)d."
        )
        % {"name": ban_list.name, "id": ban_list.pk}
    )


def joinfed(ctx: Context) -> None:
    """``/joinfed <list id>`` in a group, by its creator who owns the list."""
    message, command, user = ctx.update.message, ctx.command, ctx.update.user
    if message is None or command is None or user is None or ctx.chat_id is None:
        return
    word = command.args.strip()
    ban_list = BanList.objects.filter(pk=int(word)).first() if word.isdigit() else None
    if ban_list is None or len(word) > 18:
        ctx.reply(_("Say which list: /joinfed <list id> (/newfed in private creates one)."))
        return
    admins = chat_admins(ctx.store, ctx.client, ctx.chat_id)
    creator = admins.get(user.id)
    bot_admin = role_of(user.id) >= Role.ADMIN
    if not bot_admin and (creator is None or creator.status != "creator"):
        ctx.reply(_("Only the group's owner can add it to a shared ban list."))
        return
    if not bot_admin and ban_list.owner_id != user.id:
        ctx.reply(_("That list is not yours."))
        return
    if not fedban.chat_join(ban_list, ctx.chat_id, message.chat.title or "", user.id):
        current = fedban.list_of_chat(ctx.chat_id)
        ctx.reply(
            _("This group is in the list %(name)s already (/leavefed first).")
            % {"name": current.name if current else "?"}
        )
        return
    ctx.reply(_("This group now shares the bans of %(name)s.") % {"name": ban_list.name})


@moderator_command(RESTRICT)
def leavefed(req: Request) -> str:
    left = fedban.chat_leave(req.chat_id)
    if left is None:
        return _("This group is in no shared ban list.")
    return _("This group left the shared ban list %(name)s.") % {"name": left.name}


def _fed_change(req: Request, *, active: bool) -> str:
    ban_list = fedban.list_of_chat(req.chat_id)
    if ban_list is None:
        raise Refusal(_("This group is in no shared ban list: /joinfed <list id>."))
    target = resolve_target(req, protect=active)
    reason = " ".join(req.args)[:200]
    result = fedban.change(
        ban_list,
        user_id=target.user_id,
        name=target.label,
        reason=reason,
        active=active,
        actor=req.origin.actor,
        update_id=req.origin.update_id,
    )
    names = {"name": target.label, "list": ban_list.name, "count": result.chats}
    if not result.changed:
        if active:
            return _("%(name)s is banned in %(list)s already.") % names
        return _("%(name)s is not banned in %(list)s.") % names
    if active:
        return (
            ngettext(
                "%(name)s is banned in the %(count)d chat of %(list)s.",
                "%(name)s is banned in the %(count)d chats of %(list)s.",
                result.chats,
            )
            % names
        )
    return (
        ngettext(
            "%(name)s is unbanned in the %(count)d chat of %(list)s.",
            "%(name)s is unbanned in the %(count)d chats of %(list)s.",
            result.chats,
        )
        % names
    )


@moderator_command(RESTRICT)
def fban(req: Request) -> str:
    """``/fban (reply or @user/id) [reason]``."""
    return _fed_change(req, active=True)


@moderator_command(RESTRICT)
def unfban(req: Request) -> str:
    return _fed_change(req, active=False)


def fedinfo(ctx: Context) -> None:
    if ctx.chat_id is None:
        return
    ban_list = fedban.list_of_chat(ctx.chat_id)
    if ban_list is None:
        ctx.reply(_("This group is in no shared ban list."))
        return
    chats = ban_list.chats.count()
    bans = ban_list.bans.filter(active=True).count()
    ctx.reply(
        _("Shared ban list %(name)s (id %(id)d): %(chats)d chats, %(bans)d members banned.")
        % {"name": ban_list.name, "id": ban_list.pk, "chats": chats, "bans": bans}
    )


def _joiners(update: Update) -> list[User]:
    change = update.chat_member
    if change is not None:
        old, new = change.old_chat_member, change.new_chat_member
        inside = ("creator", "administrator", "member")
        joined = new.status in inside or (new.status == "restricted" and bool(new.is_member))
        was = old.status in inside or (old.status == "restricted" and bool(old.is_member))
        return [new.user] if joined and not was else []
    message = update.message
    return list(message.new_chat_members or []) if message is not None else []


def foresee_fban_join(update: Update, store: KVStore) -> Foresight | None:
    """Quiet for everything but a join."""
    return None if _joiners(update) else QUIET


def fban_join(ctx: Context) -> None:
    """A member on the chat's shared ban list who joins is banned at once."""
    if ctx.chat_id is None:
        return
    for user in _joiners(ctx.update):
        ban = fedban.banned_joiner(ctx.chat_id, user.id)
        if ban is not None:
            fedban.remove_joiner(ctx.client, ban, ctx.chat_id, ctx.update.update_id)


ROUTES: list[Route] = [
    Route.on_command(
        "lock",
        lock,
        help=gettext_lazy("<kind> [delete|warn|mute|ban] [duration]: lock a kind of message"),
        chat_types=CONNECTABLE,
    ),
    Route.on_command(
        "lockmessage",
        lockmessage,
        help=gettext_lazy("<kind> [text]: what a lock says when it deletes ({first}: the name)"),
        chat_types=CONNECTABLE,
    ),
    Route.on_command(
        "unlock", unlock, help=gettext_lazy("<kind>: lift a lock"), chat_types=CONNECTABLE
    ),
    Route.on_command("locks", locks, help=gettext_lazy("the chat's locks"), chat_types=CONNECTABLE),
    Route.on_command(
        "locktypes", locktypes, help=gettext_lazy("the kinds of lock"), chat_types=CONNECTABLE
    ),
    Route.on_command(
        "allowlist",
        allowlist,
        help=gettext_lazy("[domain]: link domains the url lock allows"),
        chat_types=CONNECTABLE,
    ),
    Route.on_command(
        "rmallowlist",
        rmallowlist,
        help=gettext_lazy("<domain>: stop allowing a link domain"),
        chat_types=CONNECTABLE,
    ),
    Route.on_command(
        "addblocklist",
        addblocklist,
        help=gettext_lazy('<word|"phrase"> [delete|warn|mute|ban] [duration]: block a word'),
        chat_types=CONNECTABLE,
    ),
    Route.on_command(
        "rmblocklist",
        rmblocklist,
        help=gettext_lazy("<word|phrase>: unblock a word"),
        chat_types=CONNECTABLE,
    ),
    Route.on_command(
        "blocklist",
        blocklist_command,
        help=gettext_lazy("the chat's blocked words"),
        chat_types=CONNECTABLE,
    ),
    Route.on_command(
        "approve",
        approve,
        help=gettext_lazy("(reply or @user/id): exempt a member from the automatic rules"),
        chat_types=CONNECTABLE,
    ),
    Route.on_command(
        "unapprove",
        unapprove,
        help=gettext_lazy("(reply or @user/id): end an approval"),
        chat_types=CONNECTABLE,
    ),
    Route.on_command(
        "approved", approved, help=gettext_lazy("the approved members"), chat_types=CONNECTABLE
    ),
    Route.on_command(
        "save",
        answers.save,
        help=gettext_lazy("<name> <text> (or reply): save a note; {admin} for admins only"),
        chat_types=CONNECTABLE,
    ),
    Route.on_command(
        "get", answers.get, help=gettext_lazy("<name>: a note (or #name)"), chat_types=GROUPS
    ),
    Route.on_command(
        "notes", answers.notes_list, help=gettext_lazy("the chat's notes"), chat_types=GROUPS
    ),
    Route.on_command("saved", answers.notes_list, chat_types=GROUPS),
    Route.on_command(
        "clear", answers.clear, help=gettext_lazy("<name>: remove a note"), chat_types=CONNECTABLE
    ),
    Route.on_command(
        "filter",
        answers.filter_command,
        help=gettext_lazy('<word|"phrase"> <text> (or reply): answer a keyword'),
        chat_types=CONNECTABLE,
    ),
    Route.on_command(
        "stop", answers.stop, help=gettext_lazy("<word|phrase>: remove a filter"), chat_types=GROUPS
    ),
    Route.on_command(
        "filters", answers.filters_list, help=gettext_lazy("the chat's filters"), chat_types=GROUPS
    ),
    Route.on_command(
        "report",
        report_command,
        help=gettext_lazy("(reply): report a message to the admins (or write @admin)"),
        chat_types=GROUPS,
    ),
    Route.on_command(
        "reports",
        reports_in_group,
        help=gettext_lazy("[on|off]: whether members can report here"),
        chat_types=GROUPS,
    ),
    Route.on_command(
        "reports",
        reports_in_private,
        help=gettext_lazy("[on|off]: get the reports of the chats you are an admin of"),
        chat_types=("private",),
    ),
    Route.on_callback(reports.CALLBACK, report_button),
    Route.on_command(
        "newfed",
        newfed,
        help=gettext_lazy("<name>: create a shared ban list for your groups"),
        chat_types=("private",),
    ),
    Route.on_command(
        "joinfed",
        joinfed,
        help=gettext_lazy("<list id>: this group shares the list's bans (its owner)"),
        chat_types=GROUPS,
    ),
    Route.on_command(
        "leavefed",
        leavefed,
        help=gettext_lazy("this group leaves its shared ban list"),
        chat_types=GROUPS,
    ),
    Route.on_command(
        "fban",
        fban,
        help=gettext_lazy("(reply or @user/id) [reason]: ban in every chat of the list"),
        chat_types=CONNECTABLE,
    ),
    Route.on_command(
        "unfban",
        unfban,
        help=gettext_lazy("(reply or @user/id): lift a shared ban everywhere"),
        chat_types=CONNECTABLE,
    ),
    Route.on_command(
        "fedinfo", fedinfo, help=gettext_lazy("this group's shared ban list"), chat_types=GROUPS
    ),
]
# Before anti-flood (100) and violations (110): a message a rule deletes is dealt with by
# the rule; the others still count it.
OBSERVERS: list[Observer] = [
    Observer.on(
        "rules.check", "message", enforce, chat_types=GROUPS, order=90, foresee=foresee_rules
    ),
    Observer.on(
        "rules.check-edit",
        "edited_message",
        enforce,
        chat_types=GROUPS,
        order=90,
        foresee=foresee_rules,
    ),
    Observer.on(
        "rules.fban-join", "chat_member", fban_join, chat_types=GROUPS, foresee=foresee_fban_join
    ),
    Observer.on(
        "rules.fban-join-service",
        "message",
        fban_join,
        chat_types=GROUPS,
        order=80,
        foresee=foresee_fban_join,
    ),
    Observer.on(
        "rules.report-mention",
        "message",
        report_mention,
        chat_types=GROUPS,
        order=94,
        foresee=foresee_report_mention,
    ),
    Observer.on(
        "rules.answers",
        "message",
        answers.answer,
        chat_types=GROUPS,
        order=95,
        foresee=answers.foresee_answer,
    ),
]
