"""Fixtures and helpers of the content tests."""

from __future__ import annotations

import struct
import zlib
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from content.jobs import dedupe_key
from content.models import Post
from content.services import PostContent, post_create
from telegram_bot.jobs.models import Job

CHANNEL = "@news_channel"


def png_bytes(width: int = 2, height: int = 2) -> bytes:
    """A real, tiny PNG image."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def png_upload(name: str = "photo.png", **kwargs: Any) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, png_bytes(**kwargs), content_type="image/png")


def make_post(
    text: str = "Hello, channel!",
    *,
    channel: str = CHANNEL,
    buttons: list[list[dict[str, str]]] | None = None,
    photo: Any = None,
    photo_file_id: str = "",
    publish_in: timedelta | None = None,
) -> Post:
    content = PostContent(
        channel=channel,
        text=text,
        buttons=buttons or [],
        photo=photo,
        photo_file_id=photo_file_id,
    )
    publish_at = timezone.now() + publish_in if publish_in is not None else None
    return post_create(content=content, created_by="test", publish_at=publish_at)


def make_due_post(text: str = "Hello, channel!", **kwargs: Any) -> Post:
    """A scheduled post whose time has come (its job is due now)."""
    post = make_post(text, publish_in=timedelta(minutes=5), **kwargs)
    make_due(post)
    post.refresh_from_db()
    return post


def make_due(post: Post) -> None:
    """Bring the post's time and its job's next attempt to now."""
    now = timezone.now()
    Post.objects.filter(pk=post.pk).update(publish_at=now)
    Job.objects.filter(dedupe_key=dedupe_key(post.pk)).update(next_attempt=now)


def publish_job(post: Post) -> Job:
    return Job.objects.get(dedupe_key=dedupe_key(post.pk))


def channel_sends(bot: Any, method: str = "sendMessage", channel: Any = CHANNEL) -> list[Any]:
    """Successful sends to the channel."""
    return [c for c in bot.calls_to(method) if not c.failed and c.params["chat_id"] == channel]


def admin_notices(bot: Any, owner_id: int = 1000) -> list[str]:
    return [
        c.params["text"]
        for c in bot.calls_to("sendMessage")
        if not c.failed and c.params["chat_id"] == owner_id
    ]


@pytest.fixture(autouse=True)
def media_root(settings: Any, tmp_path: Path) -> Path:
    """Uploaded photos go to a temporary MEDIA_ROOT."""
    settings.MEDIA_ROOT = str(tmp_path / "media")
    return tmp_path / "media"
