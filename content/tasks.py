"""Job handlers and django-q2 entry points of the content app. Thin: load, call the service."""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from django.utils.translation import gettext

from content.models import Post, PostStatus
from content.occurrences import post_recur
from content.publishing import post_pin, post_publish
from content.reconcile import posts_reconcile
from content.removal import post_expire, post_unpin
from telegram_bot.jobs.runner import JobRun


def publish_job(payload: dict[str, Any], run: JobRun) -> None:
    """``content.publish``: publish the post if it is (still) scheduled and due."""
    post_publish(post_id=int(payload["post_id"]), run=run)


def _publish_rerun_refusal(payload: dict[str, Any]) -> str | None:
    """The job publishes only a scheduled post that is due: a failed post is published again
    from its page, and one not due yet would spend an attempt on "not due"."""
    post = Post.objects.filter(pk=int(payload.get("post_id") or 0)).first()
    if post is None or post.status != PostStatus.SCHEDULED:
        return gettext("the post is not scheduled: publish it again from its page")
    if post.publish_at is not None and post.publish_at > timezone.now():
        return gettext("the post is not due yet: it runs at its publish time")
    return None


publish_job.rerun_refusal = _publish_rerun_refusal  # type: ignore[attr-defined]
# A post's final failure is told by the post (failed, outcome unknown, or the reconciliation of
# a post its job left behind): the runner's own "job failed" notice would tell it twice.
publish_job.tells_admins = True  # type: ignore[attr-defined]


def pin_job(payload: dict[str, Any], run: JobRun) -> None:
    """``content.pin``: pin a published post's message once."""
    post_pin(post_id=int(payload["post_id"]))


def content_reconcile() -> int:
    """django-q2 schedule: hand posts their job left behind to a new job, or fail them."""
    return posts_reconcile()


def expire_job(payload: dict[str, Any], run: JobRun) -> None:
    """``content.expire``: delete a published post's message at its delete-at time, once."""
    post_expire(post_id=int(payload["post_id"]))


def unpin_job(payload: dict[str, Any], run: JobRun) -> None:
    """``content.unpin``: unpin a pinned post's message at its unpin-at time, once."""
    post_unpin(post_id=int(payload["post_id"]))


def recur_job(payload: dict[str, Any], run: JobRun) -> None:
    """``content.recur``: a recurring post's due occurrence, created and queued once."""
    post_recur(post_id=int(payload["post_id"]))


JOB_HANDLERS = {
    "content.recur": recur_job,
    "content.publish": publish_job,
    "content.pin": pin_job,
    "content.expire": expire_job,
    "content.unpin": unpin_job,
}
