"""Publishing a post: the one ``post_publish()`` behind "publish now" and the scheduler."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NoReturn

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from content import conf, delivery, jobs
from content.copies import copies_create
from content.errors import (
    LeaseTooShortError,
    PostNotDueError,
    PostNotFoundError,
    PostStateError,
    PublishInProgressError,
    PublishOutcomeUnknownError,
)
from content.models import UNPUBLISHED, Post, PostStatus
from content.notices import UNKNOWN_OUTCOME, notify, unknown_text
from content.selectors import post_locked
from telegram_bot.client import SEND_WINDOW_SECONDS
from telegram_bot.delivery import describe, send_once
from telegram_bot.errors import TelegramApiError
from telegram_bot.jobs.models import Job, JobStatus
from telegram_bot.jobs.runner import JobRun

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Claim:
    post_id: int
    token: str
    outgoing: delivery.Outgoing


def post_publish(*, post_id: int, run: JobRun | None = None) -> Post:
    """Publish post ``post_id`` in its channel, once; return the post as it ends up.

    Used by "publish now" (``post_publish_now``, ``run`` None) and by the scheduler's
    ``content.publish`` job (``run`` is the job attempt). A post that is not ``scheduled`` is
    left alone (already published, archived, back to draft...), so any number of jobs, clusters
    and buttons converge on one publication:

    1. Claim: under the post's row lock (``SELECT ... FOR UPDATE``; SQLite's write lock), and
       only if the post is ``scheduled`` and due, and the job's lease is still ours with at
       least ``conf.MIN_SEND_SECONDS`` left, the status moves to ``publishing`` with a fresh
       ``attempt_token`` and an ``attempt_deadline`` (the job's lease expiry, or for "publish
       now" the client's longest possible call), and commits. A lease that is lost or about to
       end raises ``LeaseTooShortError`` (retryable, nothing sent): the job comes back with a
       fresh lease rather than racing its own expiry.
    2. Send: one sendMessage/sendPhoto (the core's ``send_once`` sorts its outcome into
       sent, refused or unknown), no lock held. Its parameters (and an uploaded photo's
       bytes) were prepared before the claim, so nothing else happens while it is in flight.
    3. Record: in one short transaction, fenced on the token, the status becomes ``published``
       with the channel's message id. An error Telegram answered moves the post back to
       ``scheduled`` when the job policy will retry it (the client's error is re-raised and
       the runner decides) or to ``failed`` (admins are told) when it will not.

    The one unavoidable window: Telegram has published the message, but this process dies (or
    loses the database) between Telegram's answer and the commit of step 3. The Bot API has no
    idempotency key and no way to ask whether a message was sent, so no later attempt can tell
    "sent" from "not sent". The window is as small as it can be (nothing but one UPDATE
    between the answer and the commit), and it is never papered over by sending again: a
    second channel message is worse than a late one. The post stays ``publishing``; an attempt
    that finds it so after ``attempt_deadline`` (the job has run again after its lease expired)
    does not send: it marks the post ``failed`` with ``outcome_unknown``, tells the admins to
    check the channel, and raises ``PublishOutcomeUnknownError`` (never retried). The same
    happens when a send ends without an answer (a read timeout, a dropped connection). If the
    presumed-dead attempt was only slow and its answer arrives after all, step 3 still records
    it (the token is kept) and the admins hear that it resolved itself.

    Each of these failures is told to the admins once, by the post (its job declares
    ``tells_admins``: the job runner adds no "job failed" notice of its own); a post its job
    left behind is told by the reconciliation (``content.reconcile``).
    """
    prepared = _prepare(post_id)
    claim = _claim(post_id, run, prepared)
    if claim is None:
        return _get(post_id)
    return send_once(
        lambda: delivery.send(claim.outgoing),
        sent=lambda message: _record(claim, message),
        refused=lambda exc: _send_failed(claim, exc, run),
        unknown=lambda why, exc: _send_unknown(claim, why, exc),
    )


def post_publish_now(*, post_id: int) -> Post:
    """Publish a draft, scheduled or failed post right away, in this process.

    The same ``post_publish()`` as the scheduler does the work. The post's job is moved to just
    after the call's deadline as a safety net: should this process die mid-call, the job finds
    the post ``publishing`` and handles it as ``post_publish`` describes. An error the policy
    retries hands the post to that job, due after the policy's delay; the error is re-raised
    for the caller to show.
    """
    now = timezone.now()
    with transaction.atomic():
        post = post_locked(post_id)
        in_flight = post.status == PostStatus.PUBLISHING
        if post.repeat:
            raise PostStateError(
                f"Post #{post.pk} repeats: its occurrences are published at their times."
            )
        if post.status not in UNPUBLISHED and not in_flight:
            raise PostStateError(f"Post #{post.pk} is {post.status}: it cannot be published now.")
    if in_flight:
        # Being published right now (PublishInProgressError), or left behind by an attempt
        # that died: that one is judged (outcome unknown), never sent again from here.
        return post_publish(post_id=post_id)
    with transaction.atomic():
        post = post_locked(post_id)
        if post.status not in UNPUBLISHED:
            raise PostStateError(f"Post #{post.pk} is {post.status}: it cannot be published now.")
        post.clean()
        Post.objects.filter(pk=post.pk).update(
            status=PostStatus.SCHEDULED,
            publish_at=now,
            channel=post.channel,
            outcome_unknown=False,
            last_error="",
            updated_at=now,
        )
        jobs.publish_job_set(post.pk, run_at=now + timedelta(seconds=SEND_WINDOW_SECONDS + 1))
    try:
        post = post_publish(post_id=post_id)
    except TelegramApiError as exc:
        if exc.retryable:
            _retry_later(post_id, exc)
        else:
            _drop_safety_job(post_id)
        raise
    except Exception:
        _drop_safety_job(post_id)
        raise
    _drop_safety_job(post_id)
    return post


def post_pin(*, post_id: int) -> Post:
    """Pin a published post that asks for it and is not pinned yet, and set its unpin job
    (with ``unpin_at``); Telegram's errors are raised for the job's policy (pinning again
    after a lost answer changes nothing)."""
    post = _get(post_id)
    if (
        post.status != PostStatus.PUBLISHED
        or not post.pin
        or post.unpinned_at is not None  # pinned and unpinned already: never again
        or post.message_deleted
    ):
        return post
    if not post.pinned:
        delivery.pin(post)
    with transaction.atomic():  # the pin and its unpin job: a crash loses neither
        Post.objects.filter(pk=post_id, unpinned_at__isnull=True).update(pinned=True)
        post.pinned = True
        if post.unpin_at is not None:
            jobs.unpin_job_set(post.pk, run_at=max(post.unpin_at, timezone.now()))
    return post


def post_mark_published(*, post_id: int, message_id: int | None = None) -> Post:
    """An operator checked the channel: the post whose outcome was unknown is there."""
    now = timezone.now()
    with transaction.atomic():
        post = post_locked(post_id)
        if not post.needs_review:
            raise PostStateError(
                f"Post #{post.pk} is {post.status}: only a post whose outcome is unknown can be "
                "marked published."
            )
        # The attempt token is kept: should the slow attempt's answer still arrive, it
        # records the message id.
        post.status, post.outcome_unknown, post.last_error = PostStatus.PUBLISHED, False, ""
        post.channel_message_id = message_id
        post.published_at = post.updated_at = now
        post.save(
            update_fields=[
                "status",
                "outcome_unknown",
                "last_error",
                "channel_message_id",
                "published_at",
                "updated_at",
            ]
        )
    return post


# --- the steps --------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Prepared:
    fingerprint: tuple[Any, ...]
    outgoing: delivery.Outgoing


def _prepare(post_id: int) -> _Prepared | None:
    """The message to send, built before the claim (reads an uploaded photo's bytes)."""
    post = Post.objects.filter(pk=post_id, status=PostStatus.SCHEDULED).first()
    if post is None:
        return None
    return _Prepared(_fingerprint(post), delivery.outgoing(post))


def _fingerprint(post: Post) -> tuple[Any, ...]:
    return (
        post.channel,
        post.text,
        post.buttons,
        post.photo.name,
        post.photo_file_id,
        post.silent,
        post.poll_question,
        post.poll_options,
        post.poll_type,
        post.poll_correct_option,
        post.poll_explanation,
        post.album,
    )


def _claim(post_id: int, run: JobRun | None, prepared: _Prepared | None) -> _Claim | None:
    """Step 1: scheduled -> publishing under the row lock; None when there is nothing to do."""
    now = timezone.now()
    with transaction.atomic():
        post = Post.objects.select_for_update().filter(pk=post_id).first()
        if post is None or post.status not in (PostStatus.SCHEDULED, PostStatus.PUBLISHING):
            log.info("post %s is %s: nothing to publish", post_id, post and post.status)
            return None
        if post.status == PostStatus.SCHEDULED:
            return _take(post, run, prepared, now)
        _judge_unfinished_attempt(post, now)
    # A post found publishing after its deadline: told and raised once "failed" is committed.
    notify(post_id, lambda: unknown_text(post_id))
    raise PublishOutcomeUnknownError(unknown_text(post_id))


def _take(
    post: Post, run: JobRun | None, prepared: _Prepared | None, now: datetime
) -> _Claim | None:
    """The claim proper; call under the post's lock."""
    if post.repeat:  # never sent itself: its occurrences are (content.occurrences)
        log.warning("post %s repeats: a publication job has nothing to send", post.pk)
        return None
    _check_due(post, now)
    deadline = _deadline(post.pk, run, now)
    if prepared is None or prepared.fingerprint != _fingerprint(post):
        prepared = _Prepared(_fingerprint(post), delivery.outgoing(post))  # edited meanwhile
    token = uuid.uuid4().hex
    claimed = Post.objects.filter(pk=post.pk, status=PostStatus.SCHEDULED).update(
        status=PostStatus.PUBLISHING,
        attempt_token=token,
        attempt_deadline=deadline,
        last_error="",
        outcome_unknown=False,
        updated_at=now,
    )
    if not claimed:
        return None
    copies_create(post, now)  # the other channels' copies, with the claim
    return _Claim(post_id=post.pk, token=token, outgoing=prepared.outgoing)


def _judge_unfinished_attempt(post: Post, now: datetime) -> None:
    """A post found ``publishing``: another attempt is still in flight (raise: come back after
    its deadline), or it died in the window (mark the outcome unknown). Call under the lock."""
    deadline = post.attempt_deadline
    if deadline is not None and deadline > now:
        wait = (deadline - now).total_seconds() + 1
        raise PublishInProgressError(
            f"Post #{post.pk} is being published right now.", retry_after=wait
        )
    # The attempt token is kept: a slow attempt whose answer still arrives records it.
    Post.objects.filter(pk=post.pk, status=PostStatus.PUBLISHING).update(
        status=PostStatus.FAILED, outcome_unknown=True, last_error=UNKNOWN_OUTCOME, updated_at=now
    )


def _check_due(post: Post, now: datetime) -> None:
    """A job may start just before an operator moved publish_at later: it waits again."""
    if post.publish_at is None:
        return
    wait = (post.publish_at - now).total_seconds()
    if wait > conf.DUE_TOLERANCE_SECONDS:
        raise PostNotDueError(f"post #{post.pk} is due in {wait:.0f} s", retry_after=wait)


def _deadline(post_id: int, run: JobRun | None, now: datetime) -> datetime:
    """Until when this attempt may still be waiting for Telegram.

    For a job: its lease expiry (once it expires the runner hands the job to another worker,
    and from then on this attempt is presumed dead). A lease that is lost, or has less than
    ``MIN_SEND_SECONDS`` left, raises ``LeaseTooShortError`` before anything is sent: a send
    started then would be judged "outcome unknown" by the next attempt, and returning without
    an error would let the runner mark the job succeeded while the post stays scheduled.
    """
    window = now + timedelta(seconds=SEND_WINDOW_SECONDS)
    if run is None:
        return window
    expires = (
        Job.objects.filter(pk=run.job_id, status=JobStatus.RUNNING, lease_owner=run.owner)
        .values_list("lease_expires_at", flat=True)
        .first()
    )
    if expires is None:
        log.warning("post %s: the job's lease was lost before sending", post_id)
        raise LeaseTooShortError(f"post #{post_id}: the job's lease was lost before sending")
    left = (expires - timezone.now()).total_seconds()
    if left < conf.MIN_SEND_SECONDS:
        log.warning("post %s: %.2f s of lease left, not sending", post_id, left)
        raise LeaseTooShortError(
            f"post #{post_id}: {max(left, 0.0):.2f} s of the job's lease left, under "
            f"{conf.MIN_SEND_SECONDS} s: not sent, the job comes back with a fresh lease"
        )
    return min(window, expires)


def _send_failed(claim: _Claim, exc: TelegramApiError, run: JobRun | None) -> NoReturn:
    """Step 3 after Telegram refused (or the request never left): back to scheduled when the
    job retries it, else failed (admins told); the error is raised for the caller or the job
    runner."""
    error = describe(exc)
    retry = exc.retryable if run is None else run.will_retry(exc)  # now: the job retries
    updated = Post.objects.filter(
        pk=claim.post_id, attempt_token=claim.token, status=PostStatus.PUBLISHING
    ).update(
        status=PostStatus.SCHEDULED if retry else PostStatus.FAILED,
        last_error=error,
        attempt_token="",
        attempt_deadline=None,
        updated_at=timezone.now(),
    )
    if updated and not retry:
        notify(
            claim.post_id,
            lambda: (
                _(
                    "Post #%(id)s could not be published and is marked failed: %(error)s\n"
                    "Fix it in the admin site or the panel, then publish it again."
                )
                % {"id": claim.post_id, "error": error[:500]}
            ),
        )
    raise exc


def _send_unknown(claim: _Claim, why: str, exc: BaseException) -> NoReturn:
    """Step 3 when the post may or may not be in the channel: never sent again, admins told."""
    _mark_unknown(claim.post_id, claim.token, why)
    raise PublishOutcomeUnknownError(unknown_text(claim.post_id)) from exc


def _mark_unknown(post_id: int, token: str, error: str) -> None:
    updated = Post.objects.filter(
        pk=post_id, attempt_token=token, status=PostStatus.PUBLISHING
    ).update(
        status=PostStatus.FAILED,
        outcome_unknown=True,
        last_error=f"{UNKNOWN_OUTCOME} ({error[:500]})",
        updated_at=timezone.now(),
    )
    if updated:
        notify(post_id, lambda: unknown_text(post_id))


def _record(claim: _Claim, message: dict[str, Any]) -> Post:
    """Step 3 after success: published, with the message id, fenced on the attempt token."""
    now = timezone.now()
    message_id = message.get("message_id")
    with transaction.atomic():
        post = (
            Post.objects.select_for_update()
            .filter(pk=claim.post_id, attempt_token=claim.token)
            .first()
        )
        if post is not None:
            was_unknown = post.outcome_unknown
            post.status, post.channel_message_id = PostStatus.PUBLISHED, message_id
            post.photo_file_id = delivery.sent_photo_file_id(message) or post.photo_file_id
            post.album_message_ids = message.get("album_message_ids") or []
            post.published_at = post.updated_at = now
            post.attempt_token, post.attempt_deadline = "", None
            post.outcome_unknown, post.last_error = False, ""
            if post.pin and not post.pinned:
                jobs.pin_job_set(post.pk)  # with the record: a crash loses neither
            if post.delete_at is not None:
                jobs.expire_job_set(post.pk, run_at=max(post.delete_at, now))
            post.save(
                update_fields=[
                    "status",
                    "channel_message_id",
                    "photo_file_id",
                    "album_message_ids",
                    "published_at",
                    "updated_at",
                    "attempt_token",
                    "attempt_deadline",
                    "outcome_unknown",
                    "last_error",
                ]
            )
    if post is None:
        log.error(
            "post %s: published as message %s after another attempt took over",
            claim.post_id,
            message_id,
        )
        notify(
            claim.post_id,
            lambda: (
                _(
                    "Post #%(id)s was published as message %(message)s, but another attempt had "
                    "taken it over meanwhile: check the channel for a duplicate."
                )
                % {"id": claim.post_id, "message": message_id}
            ),
        )
        return _get(claim.post_id)
    if was_unknown:
        notify(
            claim.post_id,
            lambda: (
                _(
                    "Post #%(id)s: the slow attempt got Telegram's answer after all. It is "
                    "published (message %(message)s); nothing to check."
                )
                % {"id": claim.post_id, "message": message_id}
            ),
        )
    return post


def _retry_later(post_id: int, exc: TelegramApiError) -> None:
    """After a retryable error of "publish now": the job tries again after the policy's delay."""
    with transaction.atomic():
        post = post_locked(post_id)
        if post.status == PostStatus.SCHEDULED:
            jobs.publish_job_retry(post_id, exc)


def _drop_safety_job(post_id: int) -> None:
    """Cancel the post's job unless the post still needs it (scheduled, or in flight)."""
    with transaction.atomic():
        post = Post.objects.select_for_update().filter(pk=post_id).first()
        if post is not None and post.status not in (PostStatus.SCHEDULED, PostStatus.PUBLISHING):
            jobs.publish_job_cancel(post_id)


# --- helpers ----------------------------------------------------------------------------------
def _get(post_id: int) -> Post:
    post = Post.objects.filter(pk=post_id).first()
    if post is None:
        raise PostNotFoundError(f"Post #{post_id} does not exist.")
    return post
