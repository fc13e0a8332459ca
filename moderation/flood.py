"""Anti-flood: more than N messages in T seconds from one member -> the chat's action.

On a group message's path this adds no KV round trip: the member's counter for the current
T-second window (``mod:fl:<chat>:<user>:<window>``, created with a TTL) is one of the
observer's claim counters (``flood_counters``), incremented in the same atomic step as the
update's claim; the observer reads its new value. Where the claim was not a plain one (a
take-over, a replay) it increments the counter itself, one round trip. The settings come from
an in-process cache (``moderation.conf``). Only the message that goes over
the limit pays for more (the admin list, the action), once per window. Fixed windows: a burst
that straddles two windows can reach up to 2N messages before the action, never a false one.
"""

from __future__ import annotations

import time

from django.utils.translation import gettext as _

from moderation import services
from moderation.conf import chat_settings
from moderation.models import Action, ChatSettings
from moderation.rights import chat_admins, is_group_id, is_member_message, is_protected
from moderation.services import Origin, Target
from telegram_bot.audit import BOT
from telegram_bot.errors import TelegramApiError
from telegram_bot.exemptions import is_exempt
from telegram_bot.pipeline.context import Context
from telegram_bot.pipeline.router import QUIET, ClaimCounter, Foresight
from telegram_bot.state import KVStore
from telegram_bot.updates import Update


def clock() -> float:
    return time.time()


def flood_key(chat_id: int, user_id: int, window: int) -> str:
    return f"mod:fl:{chat_id}:{user_id}:{window}"


def flood_counters(update: Update) -> list[ClaimCounter]:
    """The member's counter of the current window, for a member's message in a chat with
    anti-flood on (else none): taken with the update's claim (``Observer.counters``)."""
    counted = _counted(update)
    if counted is None:
        return []
    chat_id, user_id, settings = counted
    window = int(clock()) // settings.flood_seconds
    return [(flood_key(chat_id, user_id, window), (settings.flood_seconds + 1) * 1000)]


def _counted(update: Update) -> tuple[int, int, ChatSettings] | None:
    """The chat, the member and the chat's settings of a message anti-flood counts."""
    message = update.message
    if message is None or update.chat_id is None or not is_group_id(update.chat_id):
        return None
    user = message.from_user
    if user is None or not is_member_message(message):
        return None
    settings = chat_settings(update.chat_id)
    if settings.flood_action == Action.NONE:
        return None
    return update.chat_id, user.id, settings


def acts_at(settings: ChatSettings) -> int:
    """The count of a window at which the chat's action is taken: over the limit, once."""
    return settings.flood_messages + 1


def foresee_flood(update: Update, store: KVStore) -> Foresight:
    """Nothing unless the member's counter reaches ``acts_at`` (``Observer.foresee``): the
    same test as ``flood_counters``, without making the counter's key."""
    counted = _counted(update)
    if counted is None:
        return QUIET
    return Foresight(acts_at=(acts_at(counted[2]),))


def check_flood(ctx: Context) -> None:
    if ctx.counted is not None:  # counted with the claim
        counts = list(ctx.counted)
    else:
        counts = [ctx.store.increment(key, 1, ttl) for key, ttl in flood_counters(ctx.update)]
    message = ctx.update.message
    if not counts or message is None or message.from_user is None or ctx.chat_id is None:
        return
    user = message.from_user
    settings = chat_settings(ctx.chat_id)
    if counts[0] != acts_at(settings):
        return  # under the limit, or already acted on in this window
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
