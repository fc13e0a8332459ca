"""Telegram handlers of the community app: join requests, their buttons, the requester's
answer to the question, the panel page; members joining and leaving, /rules and the captcha
buttons. Thin: parse, check, call the service, answer.

Joins and leaves are observers, not routes: another feature (moderation, statistics) may see
the same ``chat_member`` update or service message. Both sources of one join are one event
(``community.members``)."""

from __future__ import annotations

import logging

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from community import auditing, selectors, texts
from community.records import Decider
from community.services import bot_chats, join_decisions, join_requests, members
from telegram_bot.admins import Role
from telegram_bot.audit import update_step
from telegram_bot.chat_migration import migrate_chat
from telegram_bot.errors import TelegramApiError
from telegram_bot.pipeline.context import Context
from telegram_bot.pipeline.router import QUIET, Foresight, Observer, PanelEntry, Route
from telegram_bot.state import KVStore
from telegram_bot.updates import ChatMember, Message, Update, User

log = logging.getLogger(__name__)


def on_join_request(ctx: Context) -> None:
    request = ctx.update.chat_join_request
    if request is None:
        return
    join_requests.join_request_receive(
        request=join_requests.JoinRequest.from_update(request), update_id=ctx.update.update_id
    )


def on_decision_button(ctx: Context) -> None:
    """Approve / Decline. The route is open to everyone so that every refusal, not only the
    first one in a rate-limit window, is answered with an alert; the checks are here."""
    parsed = texts.parse_callback(ctx.update.callback_data)
    if parsed is None:
        ctx.answer_callback_quietly(_("This button is not valid."), alert=True)
        return
    # Checked before the token is looked up: a non-admin learns nothing about tokens.
    if not ctx.sender.is_admin:
        ctx.answer_callback_quietly(_("Only admins can decide join requests."), alert=True)
        return
    action, token = parsed
    decider = Decider(ctx.sender.user_id, texts.display_name(ctx.update.user))
    with update_step(ctx.update, f"join_request.{action}", source="button") as step:
        result = join_decisions.join_request_decide(token=token, action=action, decider=decider)
        auditing.note_decision(step, result)
    ctx.answer_callback_quietly(result.message, alert=not result.ok)
    if result.record is not None and _pressed_on_panel(ctx):
        _show_pending(ctx)


def on_panel_list(ctx: Context) -> None:
    ctx.answer_callback_quietly(None)
    _show_pending(ctx)


def on_answer(ctx: Context) -> None:
    if ctx.sender.user_id is None or ctx.chat_id is None:
        return
    reply = join_requests.join_request_answer(
        chat_id=ctx.chat_id, user_id=ctx.sender.user_id, text=ctx.update.text
    )
    if reply:
        ctx.reply(reply)


def _show_pending(ctx: Context) -> None:
    pending = selectors.join_requests_pending()
    text, markup = texts.pending_list(pending[: texts.PANEL_LIMIT], len(pending))
    try:
        ctx.edit_callback_message(text, reply_markup=markup)
    except TelegramApiError as exc:  # "message is not modified" after a Refresh, for one
        log.info("join requests page not updated: %s", exc)


def _pressed_on_panel(ctx: Context) -> bool:
    """True when the pressed message is the panel page (it has the Refresh button)."""
    query = ctx.update.callback_query
    message = query.message if query is not None else None
    markup = message.reply_markup if message is not None else None
    rows = markup.inline_keyboard if markup is not None else []
    return any(button.callback_data == texts.LIST_CALLBACK for row in rows for button in row)


GROUPS = ("group", "supergroup")


def is_inside(member: ChatMember) -> bool:
    """In the chat: an owner, admin or member, or a restricted member who is still in."""
    if member.status == "restricted":
        return bool(member.is_member)
    return member.status in ("creator", "administrator", "member")


def on_chat_member(ctx: Context) -> None:
    change = ctx.update.chat_member
    if change is None:
        return
    was, now = is_inside(change.old_chat_member), is_inside(change.new_chat_member)
    if was == now:
        return  # promoted, restricted, unbanned while out...
    event = members.MemberEvent(
        chat_id=change.chat.id,
        chat_title=change.chat.title or "",
        user=change.new_chat_member.user,
        date=change.date,
        via_join_request=bool(change.via_join_request)
        or bool(change.invite_link and change.invite_link.creates_join_request),
        update_id=ctx.update.update_id,
        arrived_restricted=members.arrival_restriction(change.new_chat_member) if now else None,
    )
    if now:
        members.member_joined(event)
    else:
        members.member_left(event)


def foresee_service_message(update: Update, store: KVStore) -> Foresight | None:
    """Quiet for every message but a join, a leave or a migration (``Observer.foresee``)."""
    message = update.message
    if message is None:
        return QUIET
    if message.new_chat_members or message.left_chat_member or _migration(message):
        return None
    return QUIET


def _migration(message: Message) -> bool:
    extra = message.model_extra
    return bool(extra) and ("migrate_to_chat_id" in extra or "migrate_from_chat_id" in extra)


def on_service_message(ctx: Context) -> None:
    """``new_chat_members`` / ``left_chat_member``: the joins and leaves of groups where
    ``chat_member`` is not delivered (the bot is not an admin); the same join from both is
    handled once."""
    message = ctx.update.message
    if message is None:
        return
    if _migration(message):
        _migrated(message, ctx.update.update_id)
        return
    if not (message.new_chat_members or message.left_chat_member):
        return
    update_id = ctx.update.update_id
    for user in message.new_chat_members or []:
        members.member_joined(_event(message, user, update_id))
    if message.left_chat_member is not None:
        members.member_left(_event(message, message.left_chat_member, update_id))
    members.clean_service_message(message.chat.id, message.message_id)


def _migrated(message: Message, update_id: int) -> None:
    """The group became a supergroup: its settings follow it to the new id. Both messages
    (the old group's last, the new one's first) carry the pair; either does it, once."""
    extra = message.model_extra or {}
    to_id, from_id = extra.get("migrate_to_chat_id"), extra.get("migrate_from_chat_id")
    pair = (message.chat.id, to_id) if to_id is not None else (from_id, message.chat.id)
    if all(type(chat_id) is int and -(2**52) < chat_id < 0 for chat_id in pair):
        migrate_chat(pair[0], pair[1], update_id=update_id)


def _event(message: Message, user: User, update_id: int) -> members.MemberEvent:
    return members.MemberEvent(
        chat_id=message.chat.id,
        chat_title=message.chat.title or "",
        user=user,
        date=message.date,
        from_service=True,
        update_id=update_id,
    )


def on_rules(ctx: Context) -> None:
    if ctx.chat_id is not None:
        ctx.reply(members.rules_for(ctx.chat_id))


def on_captcha_button(ctx: Context) -> None:
    result = members.captcha_press(ctx.update.callback_data, ctx.sender.user_id)
    ctx.answer_callback_quietly(result.text, alert=result.alert)


def on_my_chat_member(ctx: Context) -> None:
    change = ctx.update.my_chat_member
    if change is not None:
        bot_chats.bot_chat_changed(change)


OBSERVERS: list[Observer] = [
    Observer.on(
        "community.bot_chats",
        "my_chat_member",
        on_my_chat_member,
        chat_types=("group", "supergroup", "channel"),
    ),
    Observer.on("community.members", "chat_member", on_chat_member, chat_types=GROUPS),
    Observer.on(
        "community.joins",
        "message",
        on_service_message,
        chat_types=GROUPS,
        foresee=foresee_service_message,
    ),
]
ROUTES: list[Route] = [
    Route.on_update("chat_join_request", on_join_request),
    Route.on_callback(texts.LIST_CALLBACK, on_panel_list, role=Role.ADMIN),
    Route.on_callback(texts.CALLBACK_PREFIX, on_decision_button),
    Route.on_workflow(join_requests.QUESTION.name, on_answer),
    Route.on_command(
        "rules", on_rules, chat_types=GROUPS, help=gettext_lazy("the rules of this group")
    ),
    Route.on_callback(members.CAPTCHA_CALLBACK, on_captcha_button),
]
PANEL_ENTRIES: list[PanelEntry] = [
    PanelEntry(gettext_lazy("Join requests"), texts.LIST_CALLBACK, order=20)
]
