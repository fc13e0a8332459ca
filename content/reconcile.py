"""Posts their publication job left behind, found by the ``content_reconcile`` schedule."""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _

from content import conf, jobs
from content.models import Post, PostStatus
from content.notices import UNKNOWN_OUTCOME, notify
from telegram_bot.jobs.models import Job, JobStatus
from telegram_bot.redaction import redact


def posts_reconcile(*, grace: timedelta | None = None) -> int:
    """Posts their job left behind: scheduled (or publishing) well past their time with no job
    queued or running. That happens when the runner gave up without running the handler (the
    lease expired on every attempt), the handler failed on something that is not Telegram's
    answer, or an operator cancelled the job in the jobs list. A post whose last job failed is
    marked failed (outcome unknown if it was publishing) and the admins are told; any other is
    handed to a new job due now, which publishes it or judges the unfinished attempt.
    Returns how many posts were handled."""
    now = timezone.now()
    cutoff = now - (grace if grace is not None else timedelta(seconds=conf.RECONCILE_GRACE_SECONDS))
    stuck = Post.objects.filter(
        Q(status=PostStatus.SCHEDULED, publish_at__lt=cutoff)
        | Q(status=PostStatus.PUBLISHING, attempt_deadline__lt=cutoff)
    )
    handled = 0
    for post_id in stuck.values_list("pk", flat=True):
        failed = _reconcile_one(post_id)
        if failed is not None:
            handled += 1
        if failed:
            notify(post_id, _("Post #%(id)s: %(problem)s") % {"id": post_id, "problem": failed})
    return handled


def _reconcile_one(post_id: int) -> str | None:
    """None: nothing to do; "": requeued; else the reason the post is now failed."""
    with transaction.atomic():
        post = Post.objects.select_for_update().filter(pk=post_id).first()
        if post is None or post.status not in (PostStatus.SCHEDULED, PostStatus.PUBLISHING):
            return None
        # A recurring post's job is its next occurrence's (content.recur).
        key = jobs.recur_key(post_id) if post.repeat else jobs.dedupe_key(post_id)
        job = Job.objects.filter(dedupe_key=key).first()
        if job is not None and job.status in (JobStatus.QUEUED, JobStatus.RUNNING):
            return None
        if job is None or job.status != JobStatus.FAILED:
            if post.repeat:
                jobs.recur_job_set(post_id, run_at=timezone.now())
            else:
                jobs.publish_job_set(post_id, run_at=timezone.now())
            return ""
        unknown = post.status == PostStatus.PUBLISHING
        reason = _("its publication job #%(job)s failed: %(error)s") % {
            "job": job.pk,
            "error": redact(job.last_error)[:300],
        }
        if unknown:
            reason += f". {UNKNOWN_OUTCOME}"
        Post.objects.filter(pk=post_id).update(
            status=PostStatus.FAILED,
            outcome_unknown=unknown,
            last_error=reason,
            updated_at=timezone.now(),
        )
        return reason
