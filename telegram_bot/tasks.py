"""django-q2 entry points of the core. Thin: load what is needed, call the service."""

from __future__ import annotations

import logging
import time
from typing import Any

from django.conf import settings

from telegram_bot.audit import MIRROR_JOB, mirror
from telegram_bot.bot import get_client
from telegram_bot.jobs.runner import JobRun, new_owner, run_due, run_until_idle
from telegram_bot.jobs.services import jobs_delete_finished
from telegram_bot.notifications import ADMIN_NOTICE_JOB, admin_notice_job
from telegram_bot.privacy import purge_expired_data
from telegram_bot.state import get_store

log = logging.getLogger(__name__)

# The most one django-q2 tick spends running due jobs (its schedule fires every minute; the
# cluster's timeout is 120 s). It returns sooner, as soon as no job is due.
TICK_SECONDS = 50


def kv_purge_expired() -> int:
    """Delete expired KV rows (database backend; Redis expires keys itself). This is also what
    cleans up expired workflows, rate-limit windows, update markers and dead letters."""
    deleted = get_store().purge_expired(batch=settings.KV_PURGE_BATCH)
    if deleted:
        log.info("purged %d expired KV entries", deleted)
    return deleted


def jobs_tick() -> int:
    """Claim and run the jobs that are due, until none is (at most TICK_SECONDS)."""
    return run_until_idle(TICK_SECONDS)


def jobs_run_due() -> int:
    """Run what is due right now (queued by ``job_enqueue(kick=True)``), starting none after
    TICK_SECONDS: it runs under django-q2's task timeout as the tick does."""
    return run_due(new_owner(), deadline=time.monotonic() + TICK_SECONDS)


def jobs_cleanup() -> int:
    """Delete finished jobs older than JOB_RETENTION_DAYS."""
    return jobs_delete_finished()


def privacy_retention() -> dict[str, dict[str, int]]:
    """Every app's retention purge (the *_RETENTION_DAYS settings, docs/privacy.md)."""
    removed = purge_expired_data()
    log.info("retention purge: %s", removed)
    return removed


def noop_job(payload: dict[str, Any], run: JobRun) -> None:
    """A job that does nothing: operators can check that the worker runs jobs at all."""


def audit_mirror_job(payload: dict[str, Any], run: JobRun) -> None:
    """Post one audit-log entry to a log channel."""
    mirror(payload, get_client())


JOB_HANDLERS = {
    "core.noop": noop_job,
    ADMIN_NOTICE_JOB: admin_notice_job,
    MIRROR_JOB: audit_mirror_job,
}
