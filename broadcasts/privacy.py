"""Broadcasts' personal data: who subscribed (id, name, language), their memberships of the
bot's chats, and which broadcasts reached them. See ``telegram_bot.privacy``."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from broadcasts.models import BroadcastRecipient, ChatMembership, Subscriber
from telegram_bot.privacy import Subject
from telegram_bot.state import KVStore

MODELS = {
    "broadcasts.Subscriber": "a subscriber: Telegram id, first name, username, language, dates",
    "broadcasts.ChatMembership": "membership of the bot's chats: user id, chat, since",
    "broadcasts.BroadcastRecipient": "which broadcast was sent to which user id, the outcome",
}
KEY_FAMILIES: dict[str, str] = {}
NOT_PERSONAL = {"broadcasts.Broadcast": "the message an operator wrote, its segment and times"}


def export(user_id: int, store: KVStore) -> dict[str, Any]:
    return {
        "subscriber": list(
            Subscriber.objects.filter(user_id=user_id).values(
                "user_id", "first_name", "username", "language", "status", "joined_at"
            )
        ),
        "memberships": list(
            ChatMembership.objects.filter(user_id=user_id).values(
                "chat_id", "is_member", "changed_at"
            )
        ),
        "broadcasts_received": list(
            BroadcastRecipient.objects.filter(user_id=user_id).values(
                "broadcast_id", "status", "finished_at"
            )
        ),
    }


@transaction.atomic
def erase(subject: Subject, store: KVStore) -> dict[str, int]:
    user, anon = subject.user_id, subject.anonymous_id
    return {
        "subscriber": Subscriber.objects.filter(user_id=user).delete()[0],
        "memberships": ChatMembership.objects.filter(user_id=user).delete()[0],
        # The broadcast's figures stay; the recipient becomes the anonymous id.
        "recipients": BroadcastRecipient.objects.filter(user_id=user).update(user_id=anon),
    }
