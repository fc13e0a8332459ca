"""Anti-flood: more than N messages in T seconds from one member -> the chat's action.

On a group message's path this adds one KV round trip: an increment of the member's counter
for the current T-second window, created with a TTL (``mod:fl:<chat>:<user>:<window>``). The
settings come from an in-process cache (``moderation.conf``). Only the message that goes over
the limit pays for more (the admin list, the action), once per window. Fixed windows: a burst
that straddles two windows can reach up to 2N messages before the action, never a false one.
"""

from __future__ import annotations

import time

from django.utils.translation import gettext as _

from moderation import services
from moderation.conf import chat_settings
from moderation.models import Action
from moderation.rights import chat_admins, is_member_message, is_protected
from moderation.services import Origin, Target
from telegram_bot.audit import BOT
from telegram_bot.errors import TelegramApiError
from telegram_bot.pipeline.context import Context


def clock() -> float:
    return time.time()


def flood_key(chat_id: int, user_id: int, window: int) -> str:
    return f"mod:fl:{chat_id}:{user_id}:{window}"


def check_flood(ctx: Context) -> None:
    message = ctx.update.message
    if message is None or ctx.chat_id is None:
        return
    user = message.from_user
    if user is None or not is_member_message(message):
        return
    settings = chat_settings(ctx.chat_id)
    if settings.flood_action == Action.NONE:
        return
    window = int(clock()) // settings.flood_seconds
    count = ctx.store.increment(
        flood_key(ctx.chat_id, user.id, window), 1, ttl_ms=(settings.flood_seconds + 1) * 1000
    )
    if count != settings.flood_messages + 1:
        return  # under the limit, or already acted on in this window
    target = Target(user.id, user.full_name, user.username or "")
    try:
        if is_protected(chat_admins(ctx.store, ctx.client, ctx.chat_id), user.id):
            return  # admins are exempt
        answer = services.penalize(
            ctx.client,
            origin=Origin(ctx.chat_id, BOT, "auto", ctx.update.update_id),
            action=settings.flood_action,
            target=target,
            seconds=settings.flood_action_seconds,
            reason=_("flooding"),
        )
    except TelegramApiError as exc:
        answer = services.explain(exc, target)
    ctx.reply(answer)
