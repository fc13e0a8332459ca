"""Reads on posts."""

from __future__ import annotations

from django.db.models import QuerySet

from content.models import Post, PostStatus


def post_find(post_id: int) -> Post | None:
    return Post.objects.filter(pk=post_id).first()


def posts_active() -> QuerySet[Post]:
    """Everything but archived posts, newest first."""
    return Post.objects.exclude(status=PostStatus.ARCHIVED).order_by("-created_at", "-pk")


def posts_page(page: int, *, size: int) -> tuple[list[Post], bool]:
    """One page (0-based) of active posts and whether a next page exists."""
    page = max(0, page)
    rows = list(posts_active()[page * size : (page + 1) * size + 1])
    return rows[:size], len(rows) > size


def recent_channels(limit: int = 3) -> list[str]:
    """The channels posted to most recently, for quick choice in the panel."""
    channels: list[str] = []
    for channel in Post.objects.order_by("-created_at").values_list("channel", flat=True)[:50]:
        if channel not in channels:
            channels.append(channel)
        if len(channels) == limit:
            break
    return channels
