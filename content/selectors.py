"""Reads on posts."""

from __future__ import annotations

from django.db.models import QuerySet

from content.errors import PostNotFoundError
from content.models import Post, PostStatus


def post_find(post_id: int) -> Post | None:
    return Post.objects.filter(pk=post_id).first()


def post_locked(post_id: int) -> Post:
    """The post's row, locked until the end of the caller's transaction: every change of a
    post's status or schedule goes through this lock."""
    post = Post.objects.select_for_update().filter(pk=post_id).first()
    if post is None:
        raise PostNotFoundError(f"Post #{post_id} does not exist.")
    return post


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
