"""Anti-flood: more than N messages in T seconds from one member -> the chat's action.

On a group message's path this adds no KV round trip: the member's counter for the current
T-second window (``mod:fl:<chat>:<user>:<window>``, created with a TTL) is declared, with the
count at which the chat's action is taken, in the observer's one declaration
(``foresee_flood``); the pipeline increments it in the same atomic step as the update's claim
(or itself, where the claim was not a plain one: a take-over, a replay) and the handler reads
its new value. The settings come from an in-process cache (``moderation.conf``). Only the
message that goes over the limit pays for more (the admin list, the action), once per window.
Fixed windows: a burst that straddles two windows can reach up to 2N messages before the
action, never a false one.
"""

from __future__ import annotations

import time

from django.utils.translation import gettext as _

from moderation import services
from moderation.conf import chat_settings
from moderation.models import Action
from moderation.rights import chat_admins, is_group_id, is_member_message, is_protected
from moderation.services import Origin, Target
from telegram_bot.audit import BOT
from telegram_bot.errors import TelegramApiError
from telegram_bot.exemptions import is_exempt
from telegram_bot.pipeline.context import Context
from telegram_bot.pipeline.router import QUIET, Foresight
from telegram_bot.state import KVStore
from telegram_bot.updates import Update


def clock() -> float:
    return time.time()


def flood_key(chat_id: int, user_id: int, window: int) -> str:
    return f"mod:fl:{chat_id}:{user_id}:{window}"


def foresee_flood(update: Update, store: KVStore) -> Foresight:
    """The member's counter of the current window and the count the chat's action is taken at,
    for a member's message in a chat with anti-flood on; else nothing (``Observer.foresee``)."""
    message = update.message
    if message is None or update.chat_id is None or not is_group_id(update.chat_id):
        return QUIET
    user = message.from_user
    if user is None or not is_member_message(message):
        return QUIET
    settings = chat_settings(update.chat_id)
    if settings.flood_action == Action.NONE:
        return QUIET
    window = int(clock()) // settings.flood_seconds
    counter = (flood_key(update.chat_id, user.id, window), (settings.flood_seconds + 1) * 1000)
    # Over the limit, once: below it nothing, past it acted on already in this window.
    return Foresight(counters=(counter,), acts_at=(settings.flood_messages + 1,))


def check_flood(ctx: Context) -> None:
    """The chat's action on the message that reaches its counter's ``acts_at``."""
    message = ctx.update.message
    if ctx.foresight is None or not ctx.foresight.reached(ctx.counted):
        return  # under the limit, or already acted on in this window
    if message is None or message.from_user is None or ctx.chat_id is None:
        return
    user = message.from_user
    settings = chat_settings(ctx.chat_id)
    target = Target(user.id, user.full_name, user.username or "")
    try:
        if is_exempt(ctx.chat_id, user.id):
            return  # an approved member (chat rules)
        if is_protected(chat_admins(ctx.store, ctx.client, ctx.chat_id), user.id):
            return  # admins are exempt
        answer = services.penalize(
            ctx.client,
            origin=Origin(ctx.chat_id, BOT, "auto", ctx.update.update_id, cause="flood"),
            action=settings.flood_action,
            target=target,
            seconds=settings.flood_action_seconds,
            reason=_("flooding"),
        )
    except TelegramApiError as exc:
        answer = services.explain(exc, target)
    ctx.reply(answer)
