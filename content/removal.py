"""Unpin later and delete later (expiry) of a published post, each done once and recorded.

A post may carry ``unpin_at`` (pinned posts) and ``delete_at``. Once the post is published
(``content.publishing``) the ``content.expire`` job is set to ``delete_at``; once it is pinned
the ``content.unpin`` job is set to ``unpin_at``. Changing a time moves the job; clearing it
cancels the job.

Exactly once: the deletion claims the post's attempt token (as an edit or an archive does),
deletes, and records ``deleted_at`` and the audit entry only through that token. A job that
died between Telegram's answer and the record is retried after the token's deadline and
deletes again: Telegram's "message to delete not found" counts as done, so the post is
recorded deleted once. Unpinning twice changes nothing in the channel; it is recorded once
(``unpinned_at``, set by a conditional update).
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from content import conf, delivery, jobs, validation
from content.errors import PostNotFoundError, PostStateError, PublishInProgressError
from content.models import UNPUBLISHED, Post, PostStatus
from content.selectors import post_locked
from telegram_bot.audit import BOT, audit_record
from telegram_bot.client import SEND_WINDOW_SECONDS

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Removal:
    """A post's unpin and deletion times (None: never)."""

    delete_at: datetime | None = None
    unpin_at: datetime | None = None


def post_expire(*, post_id: int) -> Post:
    """``content.expire``: delete the published post's channel message at its ``delete_at``
    and archive the post, once. A post that is no longer published, has no deletion time, or
    was moved later is left alone (a moved time has its own job)."""
    now = timezone.now()
    with transaction.atomic():
        post = post_locked(post_id)
        if not _expiry_due(post, now):
            return post
        if post.channel_message_id is None:
            raise PostStateError(
                f"Post #{post.pk}: the channel message's id is unknown, it cannot be deleted: "
                "delete it in the channel and archive the post."
            )
        token = _claim(post, now)
    try:
        delivery.delete(post)  # "message to delete not found" counts as deleted
    except Exception:
        _release(post.pk, token)
        raise
    with transaction.atomic():
        done = Post.objects.filter(pk=post.pk, attempt_token=token).update(
            status=PostStatus.ARCHIVED,
            message_deleted=True,
            deleted_at=now,
            pinned=False,
            attempt_token="",
            attempt_deadline=None,
            updated_at=timezone.now(),
        )
        if done:
            jobs.removal_jobs_cancel(post.pk, expire=False)  # nothing left to unpin
            _audit("post.expire", post)
    post.refresh_from_db()
    return post


def post_unpin(*, post_id: int) -> Post:
    """``content.unpin``: unpin the pinned post's message at its ``unpin_at``, once."""
    now = timezone.now()
    post = Post.objects.filter(pk=post_id).first()
    if post is None:
        raise PostNotFoundError(f"Post #{post_id} does not exist.")
    if (
        post.status != PostStatus.PUBLISHED
        or not post.pinned
        or post.unpinned_at is not None
        or post.unpin_at is None
        or _later_than(post.unpin_at, now)
    ):
        return post
    delivery.unpin(post)
    with transaction.atomic():
        done = Post.objects.filter(pk=post.pk, pinned=True, unpinned_at__isnull=True).update(
            pinned=False, unpinned_at=now
        )
        if done:
            _audit("post.unpin", post)
    post.refresh_from_db()
    return post


@transaction.atomic
def post_set_removal(*, post_id: int, removal: Removal) -> Post:
    """Set (or clear) a post's unpin and deletion times. A time set or changed must be ahead;
    both come after the publication. On a published post the jobs move with the times."""
    post = post_locked(post_id)
    if post.status not in UNPUBLISHED and post.status != PostStatus.PUBLISHED:
        raise PostStateError(f"Post #{post.pk} is {post.status}: its times cannot change.")
    for name, value in (("delete_at", removal.delete_at), ("unpin_at", removal.unpin_at)):
        if value is not None and value != getattr(post, name):
            validation.check_later(value, field=name)
    published = post.status == PostStatus.PUBLISHED
    validation.check_removal(
        publish_at=post.published_at if published else post.publish_at,
        delete_at=removal.delete_at,
        unpin_at=removal.unpin_at,
        pin=post.pin,
    )
    post.delete_at, post.unpin_at = removal.delete_at, removal.unpin_at
    post.updated_at = timezone.now()
    post.save(update_fields=["delete_at", "unpin_at", "updated_at"])
    if published:
        removal_jobs_set(post)
    return post


def removal_jobs_set(post: Post) -> None:
    """Set a published post's deletion and unpin jobs to its times (cancel those cleared);
    call under the post's lock, or with the record of its publication or pin."""
    now = timezone.now()
    if post.delete_at is not None and not post.message_deleted:
        jobs.expire_job_set(post.pk, run_at=max(post.delete_at, now))
    else:
        jobs.removal_jobs_cancel(post.pk, unpin=False)
    if post.unpin_at is not None and post.pinned and post.unpinned_at is None:
        jobs.unpin_job_set(post.pk, run_at=max(post.unpin_at, now))
    else:
        jobs.removal_jobs_cancel(post.pk, expire=False)


# --- helpers ----------------------------------------------------------------------------------
def _expiry_due(post: Post, now: datetime) -> bool:
    return (
        post.status == PostStatus.PUBLISHED
        and post.delete_at is not None
        and not post.message_deleted
        and not _later_than(post.delete_at, now)
    )


def _later_than(when: datetime, now: datetime) -> bool:
    return (when - now).total_seconds() > conf.DUE_TOLERANCE_SECONDS


def _claim(post: Post, now: datetime) -> str:
    """Take the post's attempt token for the deletion; call under its lock. Another call in
    flight (or one whose process died before its deadline): retried after that deadline."""
    deadline = post.attempt_deadline
    if post.attempt_token and deadline is not None and deadline > now:
        raise PublishInProgressError(
            f"Post #{post.pk} is being changed right now.",
            retry_after=(deadline - now).total_seconds() + 1,
        )
    token = uuid.uuid4().hex
    post.attempt_token = token
    post.attempt_deadline = now + timedelta(seconds=SEND_WINDOW_SECONDS)
    post.save(update_fields=["attempt_token", "attempt_deadline"])
    return token


def _release(post_id: int, token: str) -> None:
    Post.objects.filter(pk=post_id, attempt_token=token).update(
        attempt_token="", attempt_deadline=None
    )


def _audit(action: str, post: Post) -> None:
    audit_record(
        action=action,
        actor=BOT,
        source="auto",
        target_name=f"post #{post.pk}",
        detail=f"message {post.channel_message_id} in {post.channel}",
    )
