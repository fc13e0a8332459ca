"""Richer posts: a silent post (no notification sound) and pin after publishing (a job of its
own: pinned once, retried by the policy, never blocking the publication)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from content.models import Post, PostStatus
from content.publishing import post_pin
from content.services import PostContent, post_create
from telegram_bot.jobs.models import Job, JobStatus
from telegram_bot.jobs.runner import run_due
from tests.content.conftest import CHANNEL, channel_sends, make_due
from tests.fakes.telegram import FakeTelegramServer

pytestmark = pytest.mark.django_db


def due_post(text: str, **fields: Any) -> Post:
    post = post_create(
        content=PostContent(channel=CHANNEL, text=text, **fields),
        created_by="test",
        publish_at=timezone.now() + timedelta(minutes=5),
    )
    make_due(post)
    return post


def pins(bot: FakeTelegramServer) -> list[Any]:
    return [c for c in bot.calls_to("pinChatMessage") if not c.failed]


def test_a_silent_post_is_sent_without_notification(bot: FakeTelegramServer) -> None:
    due_post("Quiet news", silent=True)
    due_post("Loud news")
    while run_due("w1"):
        pass
    sends = {c.params["text"]: c.params for c in channel_sends(bot)}
    assert sends["Quiet news"]["disable_notification"] is True
    assert "disable_notification" not in sends["Loud news"]
    assert not pins(bot)


def test_a_post_to_pin_is_pinned_once_after_publishing(bot: FakeTelegramServer) -> None:
    post = due_post("Pin me", pin=True, silent=True)
    while run_due("w1"):
        pass
    post.refresh_from_db()
    assert post.status == PostStatus.PUBLISHED and post.pinned
    [pin] = pins(bot)
    assert pin.params["message_id"] == post.channel_message_id
    assert pin.params["disable_notification"] is True
    assert Job.objects.get(dedupe_key=f"pin:{post.pk}").status == JobStatus.SUCCEEDED
    post_pin(post_id=post.pk)  # again: nothing to do
    assert len(pins(bot)) == 1


def test_a_failed_pin_is_retried_and_the_post_stays_published(
    bot: FakeTelegramServer, settings: Any
) -> None:
    settings.JOB_RETRY_BASE_DELAY = 0.01
    settings.JOB_RETRY_JITTER = 0.0
    post = due_post("Pin later", pin=True)
    bot.fail_next("pinChatMessage", status=500)
    assert run_due("w1", limit=1) == 1  # publish
    assert run_due("w1", limit=1) == 1  # the pin fails
    post.refresh_from_db()
    assert post.status == PostStatus.PUBLISHED and not post.pinned
    assert [c.failed for c in bot.calls_to("pinChatMessage")] == [True]
    Job.objects.filter(status=JobStatus.QUEUED).update(next_attempt=timezone.now())
    run_due("w1")
    post.refresh_from_db()
    assert post.pinned and len(pins(bot)) == 1


def test_silent_and_pin_are_fixed_once_published(
    admin_client: Client, bot: FakeTelegramServer
) -> None:
    post = due_post("Out")
    while run_due("w1"):
        pass
    page = admin_client.get(f"/admin/content/post/{post.pk}/change/").content.decode()
    assert 'name="pin"' not in page and 'name="silent"' not in page
    draft_page = admin_client.get("/admin/content/post/add/").content.decode()
    assert 'name="pin"' in draft_page and 'name="silent"' in draft_page
