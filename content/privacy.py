"""Content's personal data: only who created a post from Telegram (``created_by`` is
``telegram:<id>``); the posts themselves are the channel's. See ``telegram_bot.privacy``."""

from __future__ import annotations

from typing import Any

from content.models import Post
from telegram_bot.privacy import Subject
from telegram_bot.state import KVStore

MODELS = {"content.Post": "created_by: the Telegram admin (telegram:<id>) who made the post"}
KEY_FAMILIES: dict[str, str] = {}
NOT_PERSONAL: dict[str, str] = {}


def export(user_id: int, store: KVStore) -> dict[str, Any]:
    return {
        "posts_created": list(
            Post.objects.filter(created_by=f"telegram:{user_id}").values(
                "id", "channel", "status", "created_at", "created_by"
            )
        )
    }


def erase(subject: Subject, store: KVStore) -> dict[str, int]:
    return {
        "posts": Post.objects.filter(created_by=f"telegram:{subject.user_id}").update(
            created_by=f"telegram:{subject.anonymous_id}"
        )
    }
