"""What Telegram reports about a published post: its reactions, from ``message_reaction_count``
updates. Views are not in the Bot API at all (no update and no method returns a channel
post's views), and the console says so.

Telegram sends ``message_reaction_count`` for messages with anonymous reactions (a channel's)
to a bot that is an administrator of the chat and asked for it in ``allowed_updates``,
grouped and up to a few minutes late. Each update carries the whole current count, so
recording it is idempotent: a re-delivered update writes the same numbers, and an older one
(an earlier ``date``) never overwrites a newer one (one conditional UPDATE).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db.models import Q

from content.models import Post, PostStatus

# Reaction counts kept per post: Telegram allows at most 11 kinds of reaction on a message
# (the channel's own list); a bound keeps a malformed update from bloating a row.
MAX_REACTION_KINDS = 50


@dataclass(frozen=True)
class ReactionCount:
    chat_id: int
    username: str
    message_id: int
    date: datetime
    reactions: list[dict[str, Any]]  # [{"reaction": label, "count": n}], most first

    @classmethod
    def from_update(cls, data: dict[str, Any]) -> ReactionCount | None:
        """From an update's ``message_reaction_count`` object; None when it is malformed."""
        try:
            chat = data["chat"]
            counts = [
                {"reaction": _label(item["type"]), "count": int(item["total_count"])}
                for item in data["reactions"][:MAX_REACTION_KINDS]
            ]
            return cls(
                chat_id=int(chat["id"]),
                username=str(chat.get("username") or ""),
                message_id=int(data["message_id"]),
                date=datetime.fromtimestamp(int(data["date"]), tz=UTC),
                reactions=sorted(counts, key=lambda c: -c["count"]),
            )
        except (KeyError, TypeError, ValueError):
            return None


def post_reactions_record(*, counts: ReactionCount) -> int:
    """Record the reaction counts of the post published as that channel message (and of any
    other post published as it: none, normally); returns the number of posts updated."""
    channels = Q(channel=str(counts.chat_id))
    if counts.username:
        channels |= Q(channel__iexact=f"@{counts.username}")
    newer = Q(reactions_date__isnull=True) | Q(reactions_date__lte=counts.date)
    return (
        Post.objects.filter(channels, newer, channel_message_id=counts.message_id)
        .filter(status__in=(PostStatus.PUBLISHED, PostStatus.ARCHIVED), message_deleted=False)
        .update(reactions=counts.reactions, reactions_date=counts.date)
    )


def _label(reaction: dict[str, Any]) -> str:
    kind = reaction.get("type")
    if kind == "emoji":
        return str(reaction["emoji"])
    if kind == "custom_emoji":
        return f"custom emoji {reaction['custom_emoji_id']}"
    if kind == "paid":
        return "paid ⭐"
    raise ValueError(f"unknown reaction type {kind!r}")
