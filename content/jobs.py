"""The post's publication job (``content.publish``, one per post by its dedupe key).

Both helpers must be called while holding the post's row lock (``select_for_update``): every
change of a post's schedule goes through that lock, so the queued job always matches it.
"""

from __future__ import annotations

from datetime import datetime

from content import conf
from telegram_bot.jobs.models import Job, JobStatus
from telegram_bot.jobs.services import job_cancel, job_enqueue

PUBLISH_KIND = "content.publish"


def dedupe_key(post_id: int) -> str:
    return f"post:{post_id}"


def publish_job_set(post_id: int, *, run_at: datetime) -> Job:
    """Make the post's publication job due at ``run_at`` (a queued one is replaced).

    A job that is running right now is kept: it takes the post's lock after us and sees the
    new schedule (a post not due yet sends it back to wait for ``publish_at``).
    """
    publish_job_cancel(post_id)
    return job_enqueue(
        PUBLISH_KIND,
        {"post_id": post_id},
        run_at=run_at,
        max_retries=conf.publish_max_retries(),
        dedupe_key=dedupe_key(post_id),
    )


def publish_job_cancel(post_id: int) -> None:
    """Cancel the post's queued publication job, if it has one."""
    queued = Job.objects.filter(dedupe_key=dedupe_key(post_id), status=JobStatus.QUEUED)
    for job_id in queued.values_list("pk", flat=True):
        job_cancel(job_id=job_id)
