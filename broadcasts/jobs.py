"""The broadcast's sending job (``broadcasts.send``, one per broadcast by its dedupe key).

A run sends for a slice of its lease, then hands the rest to the next run (a new job of the
same key), so a long broadcast never outlives a lease and other jobs get their turn.
"""

from __future__ import annotations

from datetime import datetime

from telegram_bot.jobs.models import Job, JobStatus
from telegram_bot.jobs.services import job_cancel_key, job_enqueue, job_reschedule

SEND_KIND = "broadcasts.send"
MAX_RETRIES = 20  # a killed worker costs its run an attempt


def dedupe_key(broadcast_id: int) -> str:
    return f"broadcast:{broadcast_id}"


def send_job_set(broadcast_id: int, *, run_at: datetime, kick: bool = True) -> Job:
    """Make the broadcast's job due at ``run_at``. A running one (this run handing over, or
    another that is ending) runs on without the key; a new job holds it. Two runs at once are
    safe: each recipient is claimed before its send."""
    key, payload = dedupe_key(broadcast_id), {"broadcast_id": broadcast_id}
    job = job_reschedule(SEND_KIND, payload, dedupe_key=key, run_at=run_at, max_retries=MAX_RETRIES)
    if job.status != JobStatus.RUNNING:
        return job
    Job.objects.filter(pk=job.pk, dedupe_key=key).update(dedupe_key=None)
    return job_enqueue(
        SEND_KIND, payload, dedupe_key=key, run_at=run_at, max_retries=MAX_RETRIES, kick=kick
    )


def send_job_cancel(broadcast_id: int) -> None:
    job_cancel_key(dedupe_key(broadcast_id))
