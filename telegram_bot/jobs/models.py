"""The application's own job state, visible to operators in the admin site."""

from __future__ import annotations

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class JobStatus(models.TextChoices):
    QUEUED = "queued", _("queued")
    RUNNING = "running", _("running")
    SUCCEEDED = "succeeded", _("succeeded")
    FAILED = "failed", _("failed")
    CANCELLED = "cancelled", _("cancelled")


class Job(models.Model):
    """One unit of background work: ``kind`` names its handler, ``payload`` its input.

    A worker claims a due job by taking its lease (``lease_owner``, ``lease_expires_at``) with
    an atomic update; every later write is fenced on that owner, so a worker that lost its
    lease (it was too slow, or died and came back) changes nothing.
    """

    kind = models.CharField(_("kind"), max_length=100, db_index=True)
    payload = models.JSONField(_("payload"), default=dict, blank=True)
    status = models.CharField(
        _("status"), max_length=20, choices=JobStatus.choices, default=JobStatus.QUEUED
    )
    attempts = models.PositiveIntegerField(_("attempts"), default=0)
    max_retries = models.PositiveIntegerField(_("max retries"), default=5)
    next_attempt = models.DateTimeField(_("next attempt"), default=timezone.now)
    last_error = models.TextField(_("last error"), blank=True)
    lease_owner = models.CharField(_("lease owner"), max_length=100, blank=True)
    lease_expires_at = models.DateTimeField(_("lease expires"), null=True, blank=True)
    # At most one job per dedupe key (e.g. "publish post 7"); NULL for jobs that need none.
    dedupe_key = models.CharField(
        _("dedupe key"), max_length=200, null=True, blank=True, unique=True
    )
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    started_at = models.DateTimeField(_("started"), null=True, blank=True)
    finished_at = models.DateTimeField(_("finished"), null=True, blank=True, db_index=True)

    class Meta:
        verbose_name = _("job")
        verbose_name_plural = _("jobs")
        db_table = "jobs"
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["status", "next_attempt"], name="jobs_due"),
            models.Index(fields=["status", "lease_expires_at"], name="jobs_lease"),
        ]
        # Jobs are written by the code only; operators may run one again or cancel it, which
        # is more than viewing and is not a change of its fields.
        permissions = [("operate_job", "Can run jobs again and cancel them")]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk} ({self.status})"
