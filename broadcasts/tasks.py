"""Job handlers and django-q2 entry points of the broadcasts app. Thin: load, call the service."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from broadcasts import jobs
from broadcasts.models import Broadcast, BroadcastStatus
from broadcasts.sending import broadcast_run
from telegram_bot.jobs.models import Job, JobStatus
from telegram_bot.jobs.runner import JobRun


def send_job(payload: dict[str, Any], run: JobRun) -> None:
    """``broadcasts.send``: one run (a slice) of the broadcast."""
    broadcast_run(broadcast_id=int(payload["broadcast_id"]), run=run)


def broadcasts_reconcile(grace_seconds: int = 300) -> int:
    """django-q2 schedule: a broadcast scheduled or sending whose job is gone (failed, or
    cancelled in the jobs list) gets a new one. Returns how many."""
    cutoff = timezone.now() - timedelta(seconds=grace_seconds)
    handled = 0
    live = (JobStatus.QUEUED, JobStatus.RUNNING)
    for broadcast_id in Broadcast.objects.filter(
        status__in=(BroadcastStatus.SCHEDULED, BroadcastStatus.SENDING), send_at__lt=cutoff
    ).values_list("pk", flat=True):
        with transaction.atomic():
            locked = Broadcast.objects.select_for_update().filter(pk=broadcast_id).first()
            if locked is None or locked.status not in (
                BroadcastStatus.SCHEDULED,
                BroadcastStatus.SENDING,
            ):
                continue
            key = jobs.dedupe_key(broadcast_id)
            if Job.objects.filter(dedupe_key=key, status__in=live).exists():
                continue
            jobs.send_job_set(broadcast_id, run_at=timezone.now())
            handled += 1
    return handled


JOB_HANDLERS = {jobs.SEND_KIND: send_job}
