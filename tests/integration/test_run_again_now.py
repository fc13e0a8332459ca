"""The jobs list's "Run again now" refuses, with the way that works, a job that would do
nothing while saying "succeeded" (a support answer given up: the ticket's Retry delivery; a
failed post: its page) and a post not due yet (each press spent an attempt on "not due").
The tests failed on the code before (nothing was refused)."""

from __future__ import annotations

from typing import Any

from tests.conftest import OWNER_ID
from tests.fakes.telegram import FakeTelegramServer
from tests.support.helpers import USER, message, texts


# --- (2) the jobs list's "Run again now" -------------------------------------------------------
def _run_again_now(admin_client: Any, job_pk: int) -> str:
    """Press "Run again now" on one job; the page's messages."""
    response = admin_client.post(
        "/admin/telegram_bot/job/",
        {"action": "retry_now", "_selected_action": [job_pk]},
        follow=True,
    )
    return " ".join(str(m) for m in response.context["messages"])


def test_run_again_now_on_a_failed_support_deliver_job_sends_or_does_not_report_success(
    bot: FakeTelegramServer, post_update: Any, settings: Any, admin_client: Any
) -> None:
    from telegram_bot.jobs.models import Job, JobStatus
    from telegram_bot.jobs.runner import run_due
    from tests.support.helpers import last_message_id, reply_to

    settings.JOB_RETRY_BASE_DELAY = 0.01
    settings.JOB_RETRY_MAX_DELAY = 0.02
    settings.JOB_RETRY_JITTER = 0
    settings.JOB_MAX_RETRIES = 0
    post_update(message("/support it is broken"))
    notice = last_message_id(bot, OWNER_ID, "#1")
    bot.fail_next("sendMessage", status=502, description="Bad Gateway")
    post_update(reply_to(notice, "Try turning it off and on.", user_id=OWNER_ID))
    job = Job.objects.get(kind="support.deliver")
    bot.fail_next("sendMessage", status=502, description="Bad Gateway")
    Job.objects.filter(pk=job.pk).update(next_attempt=job.created_at)
    assert run_due("w", limit=1) == 1
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED  # gave up; Telegram is fine again now
    answer = "Support · ticket #1\n\nTry turning it off and on."
    assert answer not in texts(bot, USER)

    told = _run_again_now(admin_client, job.pk)
    assert "Retry delivery" in told, told  # the way that sends it
    assert run_due("w", limit=1) == 0
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED, "'Run again now' would send nothing and succeed"


def test_run_again_now_on_a_failed_content_publish_job_publishes_or_does_not_report_success(
    bot: FakeTelegramServer, settings: Any, admin_client: Any
) -> None:
    from content.models import Post, PostStatus
    from telegram_bot.jobs.models import JobStatus
    from telegram_bot.jobs.runner import run_due
    from tests.content.conftest import channel_sends, make_due_post, publish_job

    settings.JOB_RETRY_JITTER = 0
    post = make_due_post()
    bot.fail_next("sendMessage", status=400, description="Bad Request: chat not found")
    assert run_due("w", limit=1) == 1
    post.refresh_from_db()
    job = publish_job(post)
    assert post.status == PostStatus.FAILED and job.status == JobStatus.FAILED

    told = _run_again_now(admin_client, job.pk)
    assert "publish it again from its page" in told, told
    assert run_due("w", limit=1) == 0
    job.refresh_from_db()
    assert Post.objects.get(pk=post.pk).status == PostStatus.FAILED
    assert job.status == JobStatus.FAILED, "'Run again now' would publish nothing and succeed"
    assert channel_sends(bot) == []


def test_run_again_now_on_a_post_not_yet_due_does_not_use_up_its_attempts(
    bot: FakeTelegramServer, settings: Any, admin_client: Any
) -> None:
    """Each press of "Run again now" on the queued job of a post scheduled for later costs
    the job one attempt (PostNotDueError); after max_retries + 1 presses the job has failed
    for good, the admins are told, and the post is never published on time."""
    from datetime import timedelta

    from django.utils import timezone

    from content.models import Post
    from telegram_bot.jobs.models import Job, JobStatus
    from telegram_bot.jobs.runner import run_due
    from tests.content.conftest import channel_sends, make_post, publish_job

    settings.JOB_MAX_RETRIES = 2
    post = make_post(publish_in=timedelta(hours=1))
    job = publish_job(post)
    for _ in range(3):
        assert "not due yet" in _run_again_now(admin_client, job.pk)
        run_due("w", limit=1)
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED, (job.status, job.attempts, job.last_error)
    # Its time comes: it is published.
    Post.objects.filter(pk=post.pk).update(publish_at=timezone.now())
    Job.objects.filter(pk=job.pk).update(next_attempt=timezone.now())
    run_due("w", limit=1)
    assert len(channel_sends(bot)) == 1
