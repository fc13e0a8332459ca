"""Writes on jobs: enqueue, reschedule, retry later, cancel, retry now, clean up."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django_q.tasks import async_task

from telegram_bot.errors import SchedulerError, TelegramApiError
from telegram_bot.jobs.models import Job, JobStatus
from telegram_bot.jobs.registry import job_handlers
from telegram_bot.jobs.retry import retry_delay

log = logging.getLogger(__name__)

FINISHED = (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED)
_DEDUPE_ROUNDS = 100


def job_enqueue(
    kind: str,
    payload: dict[str, Any] | None = None,
    *,
    run_at: datetime | None = None,
    max_retries: int | None = None,
    dedupe_key: str | None = None,
    kick: bool = False,
) -> Job:
    """Queue a job of ``kind``. With ``dedupe_key``, an unfinished job of that key is returned
    instead of a second one. ``kick`` asks the worker to run due jobs right after commit."""
    if kind not in job_handlers():
        raise ValueError(f"unknown job kind {kind!r}")
    if run_at is not None and timezone.is_naive(run_at):
        raise ValueError("run_at must be timezone-aware")
    fields = {
        "kind": kind,
        "payload": payload or {},
        "next_attempt": run_at or timezone.now(),
        "max_retries": settings.JOB_MAX_RETRIES if max_retries is None else max_retries,
    }
    job = _create(fields, dedupe_key)
    if kick:
        transaction.on_commit(_kick)
    return job


def _create(fields: dict[str, Any], dedupe_key: str | None) -> Job:
    if dedupe_key is None:
        return Job.objects.create(**fields)
    # Every round either creates the job, finds the unfinished job of the key (returned), or
    # frees the key of a finished one; a lost race (another caller created or freed it first)
    # only sends us round again, so racing callers never see an IntegrityError. Another round
    # is needed only when someone else made progress, so the bound is never reached in
    # practice.
    for _ in range(_DEDUPE_ROUNDS):
        try:
            with transaction.atomic():
                return Job.objects.create(dedupe_key=dedupe_key, **fields)
        except IntegrityError:
            pass
        existing = Job.objects.filter(dedupe_key=dedupe_key).first()
        if existing is None:
            continue  # freed (or deleted) since our insert failed: try again
        if existing.status not in FINISHED:
            return existing
        # A finished job gives its key up to the new one. Two callers may both free it: one
        # UPDATE changes the row, the other none, and only one of the inserts that follow wins.
        Job.objects.filter(pk=existing.pk, status__in=FINISHED).update(dedupe_key=None)
    raise SchedulerError(f"could not enqueue a job for dedupe key {dedupe_key!r}")


def job_reschedule(
    kind: str,
    payload: dict[str, Any],
    *,
    dedupe_key: str,
    run_at: datetime,
    max_retries: int | None = None,
) -> Job:
    """Make the one job of ``dedupe_key`` due at ``run_at``, in one transaction: a queued one
    is cancelled and a new one queued. A running one is kept and returned: it has the work in
    hand and decides for itself (a sender that finds another attempt in flight comes back
    after that attempt's deadline)."""
    with transaction.atomic():
        job_cancel_key(dedupe_key)
        return job_enqueue(
            kind, payload, run_at=run_at, max_retries=max_retries, dedupe_key=dedupe_key
        )


def job_retry_later(
    kind: str,
    payload: dict[str, Any],
    *,
    dedupe_key: str,
    error: BaseException | None = None,
    not_before: float = 0.0,
    max_retries: int | None = None,
) -> Job:
    """Hand a send that failed retryably outside a job (a webhook, a button, the admin site)
    to the job of ``dedupe_key``, due when the retry policy brings a failed first attempt back
    (never before Telegram's ``retry_after``, nor before ``not_before`` seconds). The job's own
    attempts then follow the same policy: every sender retries on one schedule."""
    delay = max(retry_delay(error, attempt=1), not_before)
    return job_reschedule(
        kind,
        payload,
        dedupe_key=dedupe_key,
        run_at=timezone.now() + timedelta(seconds=delay),
        max_retries=max_retries,
    )


def call_or_retry_later(
    call: Callable[[], object], kind: str, payload: dict[str, int], *, in_job: bool = False
) -> bool:
    """Make a Telegram call now; hand a retryable refusal to the job ``kind`` (one per
    ``payload``: its values make the dedupe key), or raise it inside that job, whose runner
    retries. A refusal for good is logged and dropped. True when the call went through now."""
    try:
        call()
    except TelegramApiError as exc:
        if exc.retryable and in_job:
            raise
        if exc.retryable:
            key = ":".join([kind, *(str(value) for value in payload.values())])
            job_retry_later(kind, payload, dedupe_key=key, error=exc)
        else:
            log.warning("%s %s refused by Telegram: %s", kind, payload, exc)
        return False
    return True


def job_cancel_key(dedupe_key: str) -> int:
    """Cancel the queued job of ``dedupe_key``, if there is one; return how many."""
    return Job.objects.filter(dedupe_key=dedupe_key, status=JobStatus.QUEUED).update(
        status=JobStatus.CANCELLED, finished_at=timezone.now()
    )


def job_cancel(*, job_id: int) -> bool:
    """Cancel a job that has not started; True if it was cancelled."""
    return bool(
        Job.objects.filter(pk=job_id, status=JobStatus.QUEUED).update(
            status=JobStatus.CANCELLED, finished_at=timezone.now()
        )
    )


def job_retry_now(*, job_id: int) -> bool:
    """Run a failed or waiting job now; a failed one gets one more attempt."""
    with transaction.atomic():
        job = (
            Job.objects.select_for_update()
            .filter(pk=job_id, status__in=(JobStatus.FAILED, JobStatus.QUEUED))
            .first()
        )
        if job is None:
            return False
        if job.status == JobStatus.FAILED:
            job.max_retries = max(job.max_retries, job.attempts)
        job.status, job.next_attempt, job.finished_at = JobStatus.QUEUED, timezone.now(), None
        job.save(update_fields=["status", "next_attempt", "finished_at", "max_retries"])
    return True


def jobs_delete_finished(*, older_than: timedelta | None = None) -> int:
    """Delete jobs finished longer ago than the retention; return how many."""
    cutoff = timezone.now() - (older_than or timedelta(days=settings.JOB_RETENTION_DAYS))
    deleted, _ = Job.objects.filter(status__in=FINISHED, finished_at__lt=cutoff).delete()
    return deleted


def _kick() -> None:
    async_task("telegram_bot.tasks.jobs_run_due", task_name="jobs_run_due")
