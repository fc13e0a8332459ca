"""A recurring post's occurrences: each one a post of its own, created once and published
through the one ``post_publish`` (so each is published at most once, as any post).

The recurring post itself is never sent: while ``scheduled`` its ``publish_at`` is its next
occurrence and its ``content.recur`` job is due then. The job, in one transaction under the
recurring post's lock, creates the occurrence's post (``occurrence_key`` "<id>:<local date>"
is unique), queues its publication, and moves the recurring post and its job to the next
occurrence (or archives it after the end date). A worker that dies before the commit leaves
nothing behind and the job is run again; one that dies after it leaves the occurrence created
and the recurring post moved on, so a re-delivered job finds nothing due. An occurrence missed
by more than ``conf.RECUR_GRACE_SECONDS`` (the worker was down) is skipped, and said so in the
recurring post's last error, rather than published late.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from content import conf, jobs, recurrence
from content.models import Post, PostStatus
from content.selectors import post_locked

log = logging.getLogger(__name__)

# What an occurrence takes from its recurring post.
_COPIED = (
    "channel",
    "text",
    "photo",
    "photo_file_id",
    "album",
    "poll_question",
    "poll_options",
    "poll_type",
    "poll_correct_option",
    "poll_explanation",
    "buttons",
    "silent",
    "pin",
    "also_to",
    "created_by",
)


def post_recur(*, post_id: int) -> Post | None:
    """``content.recur``: create and queue the due occurrence of recurring post ``post_id``,
    once, and move it to the next one. Returns the occurrence created (None: nothing due)."""
    now = timezone.now()
    with transaction.atomic():
        post = post_locked(post_id)
        due = post.publish_at
        if post.status != PostStatus.SCHEDULED or not post.repeat or due is None:
            return None
        if (due - now).total_seconds() > conf.DUE_TOLERANCE_SECONDS:
            return None  # moved later meanwhile: its job was moved with it
        late = (now - due).total_seconds() > conf.RECUR_GRACE_SECONDS
        occurrence = None if late else _occurrence(post, due, now)
        _move_on(post, due, now, skipped=late)
    return occurrence


def _occurrence(post: Post, due: datetime, now: datetime) -> Post:
    """The occurrence's post, created once (by its key), its publication queued; call under
    the recurring post's lock."""
    key = f"{post.pk}:{recurrence.local_date(due, post.repeat_zone).isoformat()}"
    existing = Post.objects.filter(occurrence_key=key).first()
    if existing is not None:
        return existing
    occurrence = Post(
        **{name: getattr(post, name) for name in _COPIED},
        status=PostStatus.SCHEDULED,
        publish_at=due,
        recurrence_of=post,
        occurrence_key=key,
    )
    occurrence.save()
    jobs.publish_job_set(occurrence.pk, run_at=now)
    return occurrence


def _move_on(post: Post, due: datetime, now: datetime, *, skipped: bool) -> None:
    """The recurring post to its next occurrence (its job with it), or archived after the end
    date; call under its lock."""
    assert post.repeat_until is not None
    start = max(due + timedelta(seconds=1), now - timedelta(seconds=conf.RECUR_GRACE_SECONDS))
    following = recurrence.occurrence_from(
        every=post.repeat,
        first=due,
        zone_name=post.repeat_zone,
        until=post.repeat_until,
        start=start,
    )
    if skipped:
        log.warning("post %s: the occurrence of %s was missed, skipped", post.pk, due)
        post.last_error = f"skipped the occurrence of {due:%Y-%m-%d %H:%M} UTC: the worker was down"
    if following is None:
        post.status = PostStatus.ARCHIVED  # the last occurrence is out
    else:
        post.publish_at = following
        jobs.recur_job_set(post.pk, run_at=following)
    post.updated_at = now
    post.save(update_fields=["status", "publish_at", "last_error", "updated_at"])
