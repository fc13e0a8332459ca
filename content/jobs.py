"""The post's publication job (``content.publish``, one per post by its dedupe key).

Every helper must be called while holding the post's row lock (``select_for_update``): every
change of a post's schedule goes through that lock, so the queued job always matches it.
"""

from __future__ import annotations

from datetime import datetime

from content import conf
from telegram_bot.errors import TelegramApiError
from telegram_bot.jobs.models import Job, JobStatus
from telegram_bot.jobs.services import (
    job_cancel_key,
    job_enqueue,
    job_reschedule,
    job_retry_later,
)

PUBLISH_KIND = "content.publish"
PIN_KIND = "content.pin"
EXPIRE_KIND = "content.expire"
UNPIN_KIND = "content.unpin"
RECUR_KIND = "content.recur"


def dedupe_key(post_id: int) -> str:
    return f"post:{post_id}"


def publish_job_set(post_id: int, *, run_at: datetime) -> Job:
    """Make the post's publication job due at ``run_at`` (a queued one is replaced).

    A job that is running right now may already have looked at the post and found nothing to
    do (a draft, say), and be about to end: keeping it as the post's job would end the new
    schedule with it. So it runs on without the post's key, and a new job holds the schedule.
    Both take the post's lock, and the post's claim lets one send only: whichever comes first
    publishes, once; the other finds the post published, or not due.
    """
    key, retries = dedupe_key(post_id), conf.publish_max_retries()
    payload = {"post_id": post_id}
    job = job_reschedule(PUBLISH_KIND, payload, dedupe_key=key, run_at=run_at, max_retries=retries)
    if job.status != JobStatus.RUNNING:
        return job
    Job.objects.filter(pk=job.pk, dedupe_key=key).update(dedupe_key=None)
    return job_enqueue(PUBLISH_KIND, payload, dedupe_key=key, run_at=run_at, max_retries=retries)


def publish_job_retry(post_id: int, error: TelegramApiError) -> Job:
    """After a retryable error of "publish now": the job tries again when the core retry
    policy says (as it would after a failed first attempt of its own)."""
    return job_retry_later(
        PUBLISH_KIND,
        {"post_id": post_id},
        dedupe_key=dedupe_key(post_id),
        error=error,
        max_retries=conf.publish_max_retries(),
    )


def pin_job_set(post_id: int) -> Job:
    """Pin the published post's message (a job: a retryable failure is retried by the
    policy, a final one told to the admins by the runner; pinning twice is harmless)."""
    return job_enqueue(PIN_KIND, {"post_id": post_id}, dedupe_key=f"pin:{post_id}", kick=True)


def publish_job_cancel(post_id: int) -> None:
    """Cancel the post's queued publication job (a recurring post's: its next occurrence's),
    if it has one."""
    job_cancel_key(dedupe_key(post_id))
    job_cancel_key(recur_key(post_id))


def publish_job_switch(post_id: int, *, recurring: bool) -> None:
    """Cancel the job of the other kind when a post becomes recurring or stops being so."""
    job_cancel_key(dedupe_key(post_id) if recurring else recur_key(post_id))


def recur_key(post_id: int) -> str:
    return f"recur:{post_id}"


def recur_job_set(post_id: int, *, run_at: datetime) -> Job:
    """A recurring post's next occurrence is created and published at ``run_at``
    (``content.occurrences.post_recur``)."""
    return _set_detached(RECUR_KIND, recur_key(post_id), post_id, run_at)


def expire_job_set(post_id: int, *, run_at: datetime) -> Job:
    """Delete the published post's message at ``run_at`` (its delete-at time): a queued job is
    moved there. The job deletes once (``content.removal.post_expire``)."""
    return _set_detached(EXPIRE_KIND, f"expire:{post_id}", post_id, run_at)


def unpin_job_set(post_id: int, *, run_at: datetime) -> Job:
    """Unpin the pinned post's message at ``run_at`` (its unpin-at time)."""
    return _set_detached(UNPIN_KIND, f"unpin:{post_id}", post_id, run_at)


def _set_detached(kind: str, key: str, post_id: int, run_at: datetime) -> Job:
    """As ``publish_job_set``: a job running right now may have found the old time not due
    and be about to end, so it runs on without the key and a new job holds the new time."""
    payload = {"post_id": post_id}
    job = job_reschedule(kind, payload, dedupe_key=key, run_at=run_at)
    if job.status != JobStatus.RUNNING:
        return job
    Job.objects.filter(pk=job.pk, dedupe_key=key).update(dedupe_key=None)
    return job_enqueue(kind, payload, dedupe_key=key, run_at=run_at)


def removal_jobs_cancel(post_id: int, *, expire: bool = True, unpin: bool = True) -> None:
    """Cancel the post's queued deletion and/or unpin job (their times were cleared)."""
    if expire:
        job_cancel_key(f"expire:{post_id}")
    if unpin:
        job_cancel_key(f"unpin:{post_id}")
