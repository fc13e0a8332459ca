"""Unpin later and delete later (expiry): each done once by its job, recorded (the post's
``unpinned_at`` / ``deleted_at`` and one audit entry), also when the job is re-delivered after
dying between Telegram's answer and the record; the times are checked in the form."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from content.errors import PublishInProgressError
from content.models import Post, PostStatus
from content.publishing import post_pin, post_publish_now
from content.removal import Removal, post_expire, post_set_removal, post_unpin
from content.services import PostContent, post_create
from telegram_bot.bot import get_client
from telegram_bot.jobs.models import Job, JobStatus
from telegram_bot.jobs.runner import run_due
from telegram_bot.models import AuditEntry
from tests.content.conftest import CHANNEL, make_due
from tests.content.test_admin import ADD, errors_of, form
from tests.fakes.telegram import FakeTelegramServer

pytestmark = pytest.mark.django_db


def published(text: str = "Short-lived", **fields: Any) -> Post:
    """A post published by its job, with the given unpin/delete times (made far enough ahead
    to pass the checks, then brought to now by the tests)."""
    now = timezone.now()
    post = post_create(
        content=PostContent(channel=CHANNEL, text=text, **fields),
        created_by="test",
        publish_at=now + timedelta(minutes=5),
    )
    make_due(post)
    while run_due("w1"):
        pass
    post.refresh_from_db()
    assert post.status == PostStatus.PUBLISHED
    return post


def bring_due(post: Post, name: str, kind: str) -> Job:
    now = timezone.now()
    Post.objects.filter(pk=post.pk).update(**{name: now})
    job = Job.objects.get(dedupe_key=f"{kind}:{post.pk}", status=JobStatus.QUEUED)
    Job.objects.filter(pk=job.pk).update(next_attempt=now)
    return job


def ok(bot: FakeTelegramServer, method: str) -> list[Any]:
    return [c for c in bot.calls_to(method) if not c.failed]


def audits(action: str) -> int:
    return AuditEntry.objects.filter(action=action).count()


def test_a_post_is_deleted_once_at_its_delete_time(bot: FakeTelegramServer) -> None:
    post = published(delete_at=timezone.now() + timedelta(hours=2))
    job = Job.objects.get(dedupe_key=f"expire:{post.pk}")
    assert job.status == JobStatus.QUEUED and job.next_attempt >= post.delete_at
    assert not bot.calls_to("deleteMessage")
    bring_due(post, "delete_at", "expire")
    while run_due("w1"):
        pass
    post.refresh_from_db()
    assert post.status == PostStatus.ARCHIVED and post.message_deleted and post.deleted_at
    [call] = ok(bot, "deleteMessage")
    assert call.params["message_id"] == post.channel_message_id
    assert bot.message(CHANNEL, post.channel_message_id) is None
    post_expire(post_id=post.pk)  # a re-delivered job: nothing to do
    assert len(bot.calls_to("deleteMessage")) == 1 and audits("post.expire") == 1


def test_a_job_that_died_after_deleting_counts_not_found_as_done(
    bot: FakeTelegramServer,
) -> None:
    post = published(delete_at=timezone.now() + timedelta(hours=2))
    bring_due(post, "delete_at", "expire")
    # The first attempt deleted the message, then died before recording it.
    get_client().delete_message(chat_id=CHANNEL, message_id=post.channel_message_id)
    in_flight = timezone.now() + timedelta(seconds=30)
    Post.objects.filter(pk=post.pk).update(attempt_token="dead", attempt_deadline=in_flight)
    with pytest.raises(PublishInProgressError):  # retried after the dead one's deadline
        post_expire(post_id=post.pk)
    assert len(bot.calls_to("deleteMessage")) == 1
    Post.objects.filter(pk=post.pk).update(attempt_deadline=timezone.now() - timedelta(seconds=1))
    post = post_expire(post_id=post.pk)
    [_first, again] = bot.calls_to("deleteMessage")
    assert again.failed and "message to delete not found" in again.description
    assert post.status == PostStatus.ARCHIVED and post.message_deleted
    post_expire(post_id=post.pk)
    assert len(bot.calls_to("deleteMessage")) == 2 and audits("post.expire") == 1


def test_a_pinned_post_is_unpinned_once_at_its_unpin_time(bot: FakeTelegramServer) -> None:
    now = timezone.now()
    post = published(
        pin=True, unpin_at=now + timedelta(hours=1), delete_at=now + timedelta(hours=2)
    )
    assert post.pinned and len(ok(bot, "pinChatMessage")) == 1
    assert Job.objects.get(dedupe_key=f"unpin:{post.pk}").status == JobStatus.QUEUED
    bring_due(post, "unpin_at", "unpin")
    while run_due("w1"):
        pass
    post.refresh_from_db()
    assert not post.pinned and post.unpinned_at and post.status == PostStatus.PUBLISHED
    [unpin] = ok(bot, "unpinChatMessage")
    assert unpin.params == {"chat_id": CHANNEL, "message_id": post.channel_message_id}
    post_unpin(post_id=post.pk)  # re-delivered: nothing
    post_pin(post_id=post.pk)  # a re-delivered pin job does not pin it again
    assert len(bot.calls_to("unpinChatMessage")) == 1
    assert len(bot.calls_to("pinChatMessage")) == 1 and audits("post.unpin") == 1


def test_deleting_cancels_a_pending_unpin(bot: FakeTelegramServer) -> None:
    now = timezone.now()
    post = published(
        pin=True, unpin_at=now + timedelta(hours=1), delete_at=now + timedelta(hours=2)
    )
    bring_due(post, "delete_at", "expire")
    Post.objects.filter(pk=post.pk).update(unpin_at=now - timedelta(minutes=1))
    run_due("w1", limit=1)
    post.refresh_from_db()
    assert post.message_deleted
    assert Job.objects.get(dedupe_key=f"unpin:{post.pk}").status == JobStatus.CANCELLED
    post_unpin(post_id=post.pk)
    assert not bot.calls_to("unpinChatMessage")


def test_times_of_a_published_post_move_and_clear_its_jobs(bot: FakeTelegramServer) -> None:
    post = published()
    assert not Job.objects.filter(dedupe_key=f"expire:{post.pk}").exists()
    later = timezone.now() + timedelta(days=1)
    post_set_removal(post_id=post.pk, removal=Removal(delete_at=later))
    job = Job.objects.get(dedupe_key=f"expire:{post.pk}", status=JobStatus.QUEUED)
    assert job.next_attempt == later
    post_set_removal(post_id=post.pk, removal=Removal())
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED


def future(**delta: int) -> str:
    return (timezone.now() + timedelta(**delta)).strftime("%Y-%m-%dT%H:%M")


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"unpin_at": future(hours=3)}, "Only a pinned post is unpinned later"),
        (
            {"publish_at": future(hours=3), "delete_at": future(hours=2)},
            "must come after the publication time",
        ),
        ({"delete_at": "2020-01-01T10:00"}, "in the past"),
        (
            {"pin": "on", "unpin_at": future(hours=5), "delete_at": future(hours=4)},
            "Unpin before the deletion time",
        ),
    ],
)
def test_bad_times_are_refused_in_the_form(
    bot: FakeTelegramServer, admin_client: Client, fields: dict[str, Any], problem: str
) -> None:
    response = admin_client.post(ADD, form(**fields))
    assert response.status_code == 200
    assert problem in errors_of(response)
    assert not Post.objects.exists() and not bot.calls


def test_the_form_sets_the_times_and_a_published_post_can_change_them(
    bot: FakeTelegramServer, admin_client: Client
) -> None:
    response = admin_client.post(
        ADD, form(pin="on", unpin_at=future(hours=3), delete_at=future(hours=4))
    )
    assert response.status_code == 302, errors_of(response)
    post = Post.objects.get()
    assert post.unpin_at and post.delete_at
    post_publish_now(post_id=post.pk)
    page = admin_client.get(f"/admin/content/post/{post.pk}/change/").content.decode()
    assert 'name="delete_at"' in page
    response = admin_client.post(
        f"/admin/content/post/{post.pk}/change/",
        form(text="Hello from the admin", delete_at=future(hours=6), unpin_at=""),
    )
    assert response.status_code == 302, errors_of(response)
    post.refresh_from_db()
    assert post.unpin_at is None and post.delete_at > timezone.now() + timedelta(hours=5)
    expire = Job.objects.get(dedupe_key=f"expire:{post.pk}", status=JobStatus.QUEUED)
    assert expire.next_attempt == post.delete_at
