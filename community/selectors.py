"""Reads of the community app."""

from __future__ import annotations

from collections.abc import Iterable

from community.models import BotChat, ChatPolicy
from community.records import JoinRequestRecord, JoinRequestStore
from telegram_bot.state import get_store


def policy_for_chat(chat_id: int) -> ChatPolicy:
    """The chat's policy; an unsaved default (manual, no welcome) when none is configured."""
    policy = ChatPolicy.objects.filter(chat_id=chat_id).first()
    return policy if policy is not None else ChatPolicy(chat_id=chat_id)


def join_request_get(token: str) -> JoinRequestRecord | None:
    return JoinRequestStore(get_store()).get(token)


def join_requests_pending() -> list[JoinRequestRecord]:
    """Undecided requests the bot knows about, oldest first (Telegram may have closed some of
    them on its side; deciding one then says so)."""
    records = [record for record in JoinRequestStore(get_store()).all() if record.pending]
    # expires_at_ms is creation time plus a constant: it orders requests of the same second.
    return sorted(records, key=lambda record: (record.requested_at, record.expires_at_ms))


def chat_titles(chat_ids: Iterable[int]) -> dict[int, str]:
    """The titles of the bot's chats among ``chat_ids`` (``FeatureConfig.chat_titles``)."""
    rows = BotChat.objects.filter(chat_id__in=list(chat_ids)).exclude(title="")
    return dict(rows.values_list("chat_id", "title"))


def bot_chats() -> dict[int, str]:
    """The chats the bot is a member of, with their titles (``FeatureConfig.chats``)."""
    return dict(BotChat.objects.filter(is_member=True).values_list("chat_id", "title"))
