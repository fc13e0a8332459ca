"""Claiming and running due jobs.

``claim_due`` takes leases atomically: ``SELECT ... FOR UPDATE SKIP LOCKED`` where the database
has it (PostgreSQL), and in every case a compare-and-swap ``UPDATE`` whose row count says who
won, so two workers (or two clusters) never run one job at once. A job whose lease expired is
claimed again: its worker died or hung. Every write after the claim is fenced on the lease
owner; a worker that lost its lease writes nothing.
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import ngettext

from telegram_bot.jobs.models import Job, JobStatus
from telegram_bot.jobs.registry import job_handlers, tells_admins
from telegram_bot.jobs.retry import RetryPolicy, decide
from telegram_bot.notifications import ADMIN_NOTICE_JOB, notify_admins
from telegram_bot.redaction import redact

log = logging.getLogger(__name__)


def new_owner() -> str:
    """A lease owner id naming the machine and process, unique per worker."""
    return f"{socket.gethostname()[:40]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True)
class JobRun:
    """What a job handler knows about the attempt running it."""

    job_id: int
    kind: str
    attempt: int
    owner: str
    max_retries: int | None = None  # None: read from the job

    @property
    def last_attempt(self) -> bool:
        """True when a failure of this attempt is final: the runner will not retry it."""
        return self.attempt > self._max_retries()

    def will_retry(self, exc: BaseException) -> bool:
        """What the runner will decide when this attempt ends with ``exc`` (the same policy):
        a sender records "failed" or "retrying" before it raises."""
        policy = replace(RetryPolicy.from_settings(), max_retries=self._max_retries())
        return decide(exc, attempt=self.attempt, policy=policy).retry

    def _max_retries(self) -> int:
        if self.max_retries is not None:
            return self.max_retries
        stored = Job.objects.filter(pk=self.job_id).values_list("max_retries", flat=True).first()
        return settings.JOB_MAX_RETRIES if stored is None else stored

    def remember(self, payload: dict[str, Any], **fields: Any) -> dict[str, Any]:
        """Store ``fields`` in the job's payload (fenced on this worker's lease), for the next
        attempt to read; the new payload. A field set to None is removed."""
        updated = {k: v for k, v in {**payload, **fields}.items() if v is not None}
        Job.objects.filter(pk=self.job_id, status=JobStatus.RUNNING, lease_owner=self.owner).update(
            payload=updated
        )
        return updated


def claim_due(owner: str, *, limit: int = 10, lease_seconds: int | None = None) -> list[Job]:
    """Lease up to ``limit`` due jobs (queued and due, or running with an expired lease)."""
    now = timezone.now()
    lease = timedelta(seconds=lease_seconds or settings.JOB_LEASE_SECONDS)
    due = Q(status=JobStatus.QUEUED, next_attempt__lte=now) | Q(
        status=JobStatus.RUNNING, lease_expires_at__lt=now
    )
    claimed: list[int] = []
    with transaction.atomic():
        candidates = Job.objects.filter(due).order_by("next_attempt", "pk")
        if connection.features.has_select_for_update_skip_locked:
            candidates = candidates.select_for_update(skip_locked=True)
        for job in candidates[:limit]:
            won = Job.objects.filter(
                pk=job.pk,
                status=job.status,
                lease_owner=job.lease_owner,
                attempts=job.attempts,
            ).update(
                status=JobStatus.RUNNING,
                lease_owner=owner,
                lease_expires_at=now + lease,
                attempts=F("attempts") + 1,
                started_at=now,
            )
            if won:
                claimed.append(job.pk)
    return list(Job.objects.filter(pk__in=claimed).order_by("next_attempt", "pk"))


def run_job(job: Job, owner: str, *, policy: RetryPolicy | None = None) -> str:
    """Run one claimed job and record the result (fenced on ``owner``); return the status."""
    policy = policy or RetryPolicy.from_settings()
    if not _fenced(job, owner).filter(lease_expires_at__gt=timezone.now()).exists():
        return _lost(job, owner)  # the lease ran out before the job started: leave it
    handler = job_handlers().get(job.kind)
    if handler is None:
        return _finish(job, owner, JobStatus.FAILED, f"no handler for job kind {job.kind!r}")
    if job.attempts > job.max_retries + 1:
        return _finish(
            job,
            owner,
            JobStatus.FAILED,
            f"gave up: the lease expired on all {job.max_retries + 1} attempts",
        )
    try:
        run = JobRun(
            job_id=job.pk,
            kind=job.kind,
            attempt=job.attempts,
            owner=owner,
            max_retries=job.max_retries,
        )
        handler(job.payload, run)
    except Exception as exc:  # the policy decides; nothing escapes the worker
        error = f"{type(exc).__name__}: {redact(str(exc))}"[:2000]
        decision = decide(
            exc, attempt=job.attempts, policy=_with_job_maximum(policy, job.max_retries)
        )
        if decision.retry:
            log.info(
                "job %s #%s attempt %s failed, retry in %.1fs: %s",
                job.kind,
                job.pk,
                job.attempts,
                decision.delay,
                error,
            )
            return _requeue(job, owner, error, decision.delay)
        log.warning("job %s #%s failed for good (%s): %s", job.kind, job.pk, decision.reason, error)
        return _finish(job, owner, JobStatus.FAILED, f"{error} ({decision.reason})")
    return _finish(job, owner, JobStatus.SUCCEEDED, "")


def run_due(
    owner: str,
    *,
    limit: int = 10,
    lease_seconds: int | None = None,
    deadline: float | None = None,
) -> int:
    """Claim and run up to ``limit`` due jobs, one at a time; return how many ran. None is
    claimed once ``deadline`` (a ``time.monotonic()`` value) has passed.

    Each job is claimed just before it runs, so it starts with its whole lease: claiming a
    batch up front would let the later jobs' leases run out while the first ones run.
    """
    ran = 0
    while ran < limit and (deadline is None or time.monotonic() < deadline):
        claimed = claim_due(owner, limit=1, lease_seconds=lease_seconds)
        if not claimed:
            break
        run_job(claimed[0], owner)
        ran += 1
    return ran


def run_until_idle(seconds: float, *, owner: str | None = None) -> int:
    """Run due jobs until none is due, for at most about ``seconds``; return how many ran.

    The django-q2 tick: it returns as soon as nothing is due within its window, so it holds a
    worker only while there is work (other schedules and kicks do not queue behind an idle
    loop, and a stopping cluster does not wait for one). A job that falls due before the window
    ends is waited for, so a short retry or a post scheduled for 12:00:00 runs on time rather
    than at the next tick; later ones run at a later tick, or at once with ``kick``.
    """
    owner = owner or new_owner()
    deadline = time.monotonic() + seconds
    total = 0
    while time.monotonic() < deadline:
        # The deadline goes into each round: a backlog of slow sends must not run the tick
        # past django-q2's task timeout, whose alarm would stop a job in the middle of a send.
        ran = run_due(owner, deadline=deadline)
        total += ran
        if ran:
            continue
        wait = seconds_until_next_due()
        # A job due now that run_due did not take is another worker's: nothing to wait for.
        if wait is None or wait <= 0 or time.monotonic() + wait >= deadline:
            break
        time.sleep(wait)
    return total


def seconds_until_next_due() -> float | None:
    """Seconds until the earliest queued job falls due (0 if one is due); None if none."""
    next_attempt = (
        Job.objects.filter(status=JobStatus.QUEUED)
        .order_by("next_attempt")
        .values_list("next_attempt", flat=True)
        .first()
    )
    if next_attempt is None:
        return None
    return max(0.0, (next_attempt - timezone.now()).total_seconds())


def run_for(
    seconds: float,
    *,
    owner: str | None = None,
    idle_sleep: float = 1.0,
    lease_seconds: int | None = None,
) -> int:
    """Keep running due jobs for about ``seconds``, waiting for more when none is due (a
    dedicated worker: ``manage.py run_jobs --seconds``); return how many ran."""
    owner = owner or new_owner()
    deadline = time.monotonic() + seconds
    total = 0
    while time.monotonic() < deadline:
        ran = run_due(owner, lease_seconds=lease_seconds)
        total += ran
        if not ran:
            time.sleep(min(idle_sleep, max(0.0, deadline - time.monotonic())))
    return total


def _with_job_maximum(policy: RetryPolicy, max_retries: int) -> RetryPolicy:
    return replace(policy, max_retries=max_retries)


def _requeue(job: Job, owner: str, error: str, delay: float) -> str:
    updated = _fenced(job, owner).update(
        status=JobStatus.QUEUED,
        next_attempt=timezone.now() + timedelta(seconds=delay),
        last_error=error,
        lease_owner="",
        lease_expires_at=None,
    )
    return JobStatus.QUEUED if updated else _lost(job, owner)


def _finish(job: Job, owner: str, status: str, error: str) -> str:
    updated = _fenced(job, owner).update(
        status=status, last_error=error, finished_at=timezone.now(), lease_expires_at=None
    )
    if not updated:
        return _lost(job, owner)
    if status == JobStatus.FAILED:
        _notify_failure(job, error)
    return status


def _fenced(job: Job, owner: str):  # type: ignore[no-untyped-def]
    return Job.objects.filter(pk=job.pk, status=JobStatus.RUNNING, lease_owner=owner)


def _lost(job: Job, owner: str) -> str:
    log.warning("job %s #%s: lease lost by %s, result discarded", job.kind, job.pk, owner)
    return "lost"


def _notify_failure(job: Job, error: str) -> None:
    if job.kind == ADMIN_NOTICE_JOB:
        return  # recorded as a delivery failure; a notice about a lost notice could loop
    if tells_admins(job.kind):
        return  # its handler (or its app's reconciliation) told them, once, what to do

    def text() -> str:
        return (
            ngettext(
                "Job %(kind)s #%(id)s failed after %(count)d attempt.",
                "Job %(kind)s #%(id)s failed after %(count)d attempts.",
                job.attempts,
            )
            % {"kind": job.kind, "id": job.pk, "count": job.attempts}
            + "\n"
            + error[:500]
        )

    try:
        notify_admins(text, purpose="job_failed")
    except Exception:  # notifying must not turn a recorded failure into a crash
        log.exception("could not notify admins about job %s", job.pk)
