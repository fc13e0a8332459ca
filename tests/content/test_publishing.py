"""post_publish against the fake Bot API: once, with the job's retry policy, never twice."""

from __future__ import annotations

import socket
import threading
import time
from datetime import timedelta
from typing import Any

import pytest
from django.db import connections
from django.utils import timezone

from content import conf, publishing, services
from content.errors import LeaseTooShortError, PostStateError, PublishOutcomeUnknownError
from content.models import Post, PostStatus
from content.publishing import (
    post_mark_published,
    post_publish,
    post_publish_now,
)
from content.reconcile import posts_reconcile
from telegram_bot.errors import TelegramApiError
from telegram_bot.jobs.models import Job, JobStatus
from telegram_bot.jobs.runner import JobRun, claim_due, run_due, run_job
from tests.content.conftest import (
    CHANNEL,
    admin_notices,
    channel_sends,
    make_due,
    make_due_post,
    make_post,
    png_bytes,
    png_upload,
    publish_job,
)
from tests.fakes.telegram import FakeTelegramServer

BUTTONS = [[{"text": "Read more", "url": "https://example.org/post"}]]


@pytest.mark.django_db
def test_it_publishes_a_due_post_once_with_its_buttons(bot: FakeTelegramServer) -> None:
    post = make_due_post("Big news", buttons=BUTTONS)
    assert run_due("w1") == 1
    assert run_due("w1") == 0
    [sent] = channel_sends(bot)
    assert sent.params["text"] == "Big news"
    assert sent.params["reply_markup"] == {"inline_keyboard": BUTTONS}
    post.refresh_from_db()
    assert post.status == PostStatus.PUBLISHED
    assert post.channel_message_id == bot.message(CHANNEL, post.channel_message_id)["message_id"]
    assert post.published_at is not None and post.attempt_token == ""
    assert publish_job(post).status == JobStatus.SUCCEEDED


@pytest.mark.django_db
def test_it_does_not_publish_before_publish_at(bot: FakeTelegramServer) -> None:
    post = make_post(publish_in=timedelta(hours=1))
    assert run_due("w1") == 0
    assert publish_job(post).next_attempt == post.publish_at
    assert channel_sends(bot) == []


@pytest.mark.django_db
def test_it_retries_server_errors_with_growing_delays_then_publishes_once(
    bot: FakeTelegramServer, settings: Any
) -> None:
    settings.JOB_RETRY_JITTER = 0
    settings.JOB_RETRY_BASE_DELAY = 10
    bot.fail_next("sendMessage", times=2, status=500)
    post = make_due_post()
    waits = []
    for _ in range(3):
        before = timezone.now()
        run_due("w1")
        job = publish_job(post)
        if job.status == JobStatus.QUEUED:
            post.refresh_from_db()
            assert post.status == PostStatus.SCHEDULED  # handed back to the job's policy
            waits.append((job.next_attempt - before).total_seconds())
            make_due(post)
    post.refresh_from_db()
    assert post.status == PostStatus.PUBLISHED
    assert publish_job(post).attempts == 3
    assert waits[0] == pytest.approx(10, abs=1) and waits[1] == pytest.approx(20, abs=1)
    assert [c.failed for c in bot.calls_to("sendMessage")] == [True, True, False]
    assert len(channel_sends(bot)) == 1


@pytest.mark.django_db
def test_it_fails_a_post_on_a_400_without_retry_and_tells_the_admins(
    bot: FakeTelegramServer,
) -> None:
    bot.fail_next("sendMessage", status=400, description="Bad Request: chat not found")
    post = make_due_post()
    run_due("w1")
    job = publish_job(post)
    assert (job.status, job.attempts) == (JobStatus.FAILED, 1)
    post.refresh_from_db()
    assert post.status == PostStatus.FAILED and not post.outcome_unknown
    assert "chat not found" in post.last_error
    assert len([c for c in bot.calls_to("sendMessage") if c.params["chat_id"] == CHANNEL]) == 1
    # One failure, one notice: the post's, which says what to do (not also the job runner's).
    [notice] = admin_notices(bot)
    assert f"Post #{post.pk} could not be published" in notice
    assert run_due("w1") == 0


@pytest.mark.django_db
def test_it_waits_at_least_retry_after_on_a_429(bot: FakeTelegramServer, settings: Any) -> None:
    settings.JOB_RETRY_BASE_DELAY = 0.01
    bot.fail_next("sendMessage", status=429, retry_after=3)
    post = make_due_post()
    before = timezone.now()
    run_due("w1")
    job = publish_job(post)
    assert job.status == JobStatus.QUEUED
    assert (job.next_attempt - before).total_seconds() >= 3
    assert run_due("w1") == 0  # not before retry_after
    make_due(post)
    run_due("w1")
    post.refresh_from_db()
    assert post.status == PostStatus.PUBLISHED
    assert len(channel_sends(bot)) == 1


@pytest.mark.django_db
def test_it_marks_the_post_failed_when_the_last_retry_fails(
    bot: FakeTelegramServer, settings: Any
) -> None:
    settings.CONTENT_PUBLISH_MAX_RETRIES = 1
    settings.JOB_RETRY_BASE_DELAY = 0.01
    bot.fail_next("sendMessage", times=2, status=503)
    post = make_due_post()
    for _ in range(3):
        make_due(post)
        run_due("w1")
    job = publish_job(post)
    assert (job.status, job.attempts) == (JobStatus.FAILED, 2)
    post.refresh_from_db()
    assert post.status == PostStatus.FAILED
    assert any(f"Post #{post.pk} could not be published" in t for t in admin_notices(bot))


@pytest.mark.django_db
def test_it_retries_when_telegram_was_never_reached(bot: FakeTelegramServer, settings: Any) -> None:
    with socket.socket() as sock:  # a loopback port that nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings.TELEGRAM_API_BASE_URL = f"http://127.0.0.1:{port}"
    post = make_due_post()
    run_due("w1")
    post.refresh_from_db()
    assert post.status == PostStatus.SCHEDULED and not post.outcome_unknown
    assert "ConnectError" in post.last_error
    assert publish_job(post).status == JobStatus.QUEUED


@pytest.mark.django_db
@pytest.mark.parametrize(
    "fault",
    [
        {"drop_connection": True},
        {"status": 504, "raw_body": b"<html>504 Gateway Time-out</html>"},
    ],
    ids=["dropped-connection", "proxy-gateway-timeout"],
)
def test_it_never_resends_when_the_answer_was_lost(
    bot: FakeTelegramServer, fault: dict[str, Any]
) -> None:
    bot.fail_next("sendMessage", **fault)
    post = make_due_post()
    run_due("w1")
    post.refresh_from_db()
    assert post.status == PostStatus.FAILED and post.outcome_unknown
    job = publish_job(post)
    assert job.status == JobStatus.FAILED and "PublishOutcomeUnknownError" in job.last_error
    assert any("may or may not be in the channel" in t for t in admin_notices(bot))
    # An operator checked the channel.
    post_mark_published(post_id=post.pk)
    post.refresh_from_db()
    assert post.status == PostStatus.PUBLISHED and not post.outcome_unknown


@pytest.mark.django_db
def test_an_attempt_that_died_in_the_window_is_not_sent_again(bot: FakeTelegramServer) -> None:
    post = make_due_post()
    Post.objects.filter(pk=post.pk).update(
        status=PostStatus.PUBLISHING,
        attempt_token="dead-worker",
        attempt_deadline=timezone.now() - timedelta(seconds=1),
    )
    run_due("w2")
    assert channel_sends(bot) == []
    post.refresh_from_db()
    assert (post.status, post.outcome_unknown) == (PostStatus.FAILED, True)
    assert post.attempt_token == "dead-worker"  # its late answer could still be recorded
    job = publish_job(post)
    assert job.status == JobStatus.FAILED and "PublishOutcomeUnknownError" in job.last_error
    assert any(f"Post #{post.pk}: An attempt" in t for t in admin_notices(bot))


@pytest.mark.django_db
def test_a_publication_in_flight_makes_the_job_come_back_after_its_deadline(
    bot: FakeTelegramServer,
) -> None:
    post = make_due_post()
    deadline = timezone.now() + timedelta(seconds=30)
    Post.objects.filter(pk=post.pk).update(
        status=PostStatus.PUBLISHING, attempt_token="busy", attempt_deadline=deadline
    )
    run_due("w1")
    job = publish_job(post)
    assert job.status == JobStatus.QUEUED and job.next_attempt >= deadline
    assert channel_sends(bot) == []
    post.refresh_from_db()
    assert post.status == PostStatus.PUBLISHING


@pytest.mark.django_db(transaction=True)
def test_a_slow_attempt_presumed_dead_still_records_its_answer(bot: FakeTelegramServer) -> None:
    post = make_due_post()
    bot.delay_next("sendMessage", 1.5)
    results: list[Any] = []

    def slow() -> None:
        try:
            results.append(post_publish(post_id=post.pk))
        except Exception as exc:  # pragma: no cover - reported below
            results.append(exc)
        finally:
            connections.close_all()

    thread = threading.Thread(target=slow)
    thread.start()
    while not bot.calls_to("sendMessage"):
        time.sleep(0.01)
    # Its deadline passes (as if its lease had expired): the next attempt presumes it dead.
    Post.objects.filter(pk=post.pk).update(attempt_deadline=timezone.now())
    with pytest.raises(PublishOutcomeUnknownError):
        post_publish(post_id=post.pk)
    thread.join(timeout=10)
    post.refresh_from_db()
    assert (post.status, post.outcome_unknown) == (PostStatus.PUBLISHED, False)
    assert post.channel_message_id is not None
    assert len(channel_sends(bot)) == 1
    assert any("got Telegram's answer after all" in t for t in admin_notices(bot))


@pytest.mark.django_db
def test_a_worker_that_lost_its_lease_sends_nothing(bot: FakeTelegramServer) -> None:
    post = make_due_post()
    [stale] = claim_due("slow-worker", lease_seconds=60)
    Job.objects.filter(pk=stale.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    [fresh] = claim_due("new-worker")
    assert run_job(stale, "slow-worker") == "lost"
    assert channel_sends(bot) == []
    assert run_job(fresh, "new-worker") == JobStatus.SUCCEEDED
    post.refresh_from_db()
    assert post.status == PostStatus.PUBLISHED
    assert len(channel_sends(bot)) == 1


@pytest.mark.django_db
def test_a_job_with_almost_no_lease_left_does_not_send_and_comes_back(
    bot: FakeTelegramServer,
) -> None:
    post = make_due_post()
    [job] = claim_due("w1", lease_seconds=60)
    almost_over = timezone.now() + timedelta(seconds=0.2)  # under MIN_SEND_SECONDS
    Job.objects.filter(pk=job.pk).update(lease_expires_at=almost_over)
    assert run_job(job, "w1") == JobStatus.QUEUED
    assert channel_sends(bot) == []
    post.refresh_from_db()
    assert (post.status, post.outcome_unknown, post.attempt_token) == (
        PostStatus.SCHEDULED,
        False,
        "",
    )
    assert "LeaseTooShortError" in publish_job(post).last_error
    assert admin_notices(bot) == []  # nothing for the admins to check
    make_due(post)  # the next attempt has a fresh lease: published, once
    assert run_due("w2") == 1
    post.refresh_from_db()
    assert post.status == PostStatus.PUBLISHED and not post.outcome_unknown
    assert len(channel_sends(bot)) == 1
    assert publish_job(post).status == JobStatus.SUCCEEDED


@pytest.mark.django_db
def test_a_send_needs_min_send_seconds_of_lease(
    bot: FakeTelegramServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(conf, "MIN_SEND_SECONDS", 30.0)
    post = make_due_post()
    [job] = claim_due("w1", lease_seconds=20)
    assert run_job(job, "w1") == JobStatus.QUEUED
    assert channel_sends(bot) == []
    monkeypatch.setattr(conf, "MIN_SEND_SECONDS", 10.0)
    make_due(post)
    [job] = claim_due("w1", lease_seconds=20)
    assert run_job(job, "w1") == JobStatus.SUCCEEDED
    post.refresh_from_db()
    assert post.status == PostStatus.PUBLISHED
    assert post.published_at is not None and len(channel_sends(bot)) == 1


@pytest.mark.django_db
def test_a_lease_that_runs_out_before_sending_is_retried_not_marked_succeeded(
    bot: FakeTelegramServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    post = make_due_post()
    [job] = claim_due("slow-worker", lease_seconds=60)
    prepare = publishing._prepare

    def slow_prepare(post_id: int) -> Any:
        # The lease runs out while the message is prepared (a big photo read from disk); no
        # other worker has claimed the job yet, so this worker's result is still recorded.
        Job.objects.filter(pk=job.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
        return prepare(post_id)

    monkeypatch.setattr(publishing, "_prepare", slow_prepare)
    assert run_job(job, "slow-worker") == JobStatus.QUEUED  # not "succeeded"
    assert channel_sends(bot) == []
    post.refresh_from_db()
    assert post.status == PostStatus.SCHEDULED
    assert "LeaseTooShortError" in publish_job(post).last_error
    monkeypatch.setattr(publishing, "_prepare", prepare)
    make_due(post)
    assert run_due("w2") == 1
    post.refresh_from_db()
    assert post.status == PostStatus.PUBLISHED
    assert len(channel_sends(bot)) == 1


@pytest.mark.django_db
def test_post_publish_with_a_lost_lease_raises_a_retryable_error(bot: FakeTelegramServer) -> None:
    post = make_due_post()
    [job] = claim_due("w1", lease_seconds=60)
    Job.objects.filter(pk=job.pk).update(lease_owner="someone-else")
    run = JobRun(job_id=job.pk, kind=job.kind, attempt=job.attempts, owner="w1")
    with pytest.raises(LeaseTooShortError, match="lease was lost") as raised:
        post_publish(post_id=post.pk, run=run)
    assert raised.value.retryable
    assert channel_sends(bot) == []
    post.refresh_from_db()
    assert post.status == PostStatus.SCHEDULED and post.attempt_token == ""


@pytest.mark.django_db
def test_a_job_started_before_a_reschedule_waits_for_the_new_time(
    bot: FakeTelegramServer,
) -> None:
    post = make_due_post()
    later = timezone.now() + timedelta(hours=1)
    Post.objects.filter(pk=post.pk).update(publish_at=later)  # the job was already due
    run_due("w1")
    assert channel_sends(bot) == []
    job = publish_job(post)
    assert job.status == JobStatus.QUEUED
    assert abs((job.next_attempt - later).total_seconds()) < 5


@pytest.mark.django_db
def test_a_job_for_a_post_that_is_no_longer_scheduled_does_nothing(
    bot: FakeTelegramServer,
) -> None:
    post = make_due_post()
    Post.objects.filter(pk=post.pk).update(status=PostStatus.ARCHIVED)
    run_due("w1")
    assert channel_sends(bot) == []
    assert publish_job(post).status == JobStatus.SUCCEEDED


# --- publish now ------------------------------------------------------------------------------
@pytest.mark.django_db
def test_publish_now_publishes_once_and_cancels_the_safety_job(bot: FakeTelegramServer) -> None:
    post = make_post("Right now")
    published = post_publish_now(post_id=post.pk)
    assert published.status == PostStatus.PUBLISHED
    assert publish_job(post).status == JobStatus.CANCELLED
    with pytest.raises(PostStateError):
        post_publish_now(post_id=post.pk)
    assert run_due("w1") == 0
    assert len(channel_sends(bot)) == 1


@pytest.mark.django_db
def test_publish_now_hands_a_retryable_error_to_the_job(
    bot: FakeTelegramServer, settings: Any
) -> None:
    settings.JOB_RETRY_JITTER = 0
    settings.JOB_RETRY_BASE_DELAY = 30
    bot.fail_next("sendMessage", status=502)
    post = make_post()
    before = timezone.now()
    with pytest.raises(TelegramApiError):
        post_publish_now(post_id=post.pk)
    post.refresh_from_db()
    assert post.status == PostStatus.SCHEDULED
    job = publish_job(post)
    assert job.status == JobStatus.QUEUED
    assert (job.next_attempt - before).total_seconds() == pytest.approx(30, abs=2)
    make_due(post)
    run_due("w1")
    post.refresh_from_db()
    assert post.status == PostStatus.PUBLISHED
    assert len(channel_sends(bot)) == 1


@pytest.mark.django_db
def test_publish_now_refuses_a_permanent_error_and_marks_the_post_failed(
    bot: FakeTelegramServer,
) -> None:
    bot.fail_next("sendMessage", status=403, description="Forbidden: bot is not a member")
    post = make_post()
    with pytest.raises(TelegramApiError):
        post_publish_now(post_id=post.pk)
    post.refresh_from_db()
    assert post.status == PostStatus.FAILED
    assert publish_job(post).status == JobStatus.CANCELLED
    assert any("could not be published" in t for t in admin_notices(bot))


@pytest.mark.django_db
def test_a_photo_is_uploaded_as_multipart_then_sent_by_file_id(bot: FakeTelegramServer) -> None:
    post = make_post("A caption", photo=png_upload(), buttons=BUTTONS)
    post_publish_now(post_id=post.pk)
    [sent] = channel_sends(bot, "sendPhoto")
    assert sent.params["photo"].data == png_bytes()
    assert sent.params["photo"].content_type == "image/png"
    assert sent.params["caption"] == "A caption"
    assert sent.params["reply_markup"] == {"inline_keyboard": BUTTONS}
    post.refresh_from_db()
    assert post.photo_file_id  # from Telegram's answer
    assert post.photo.name.startswith("content/photos/")


@pytest.mark.django_db
def test_publish_now_on_a_post_left_publishing_judges_it_and_sends_nothing(
    bot: FakeTelegramServer,
) -> None:
    post = make_due_post()
    Post.objects.filter(pk=post.pk).update(
        status=PostStatus.PUBLISHING,
        attempt_token="dead",
        attempt_deadline=timezone.now() - timedelta(minutes=5),
    )
    with pytest.raises(PublishOutcomeUnknownError):
        post_publish_now(post_id=post.pk)
    post.refresh_from_db()
    assert post.needs_review
    assert channel_sends(bot) == []


# --- posts their job left behind --------------------------------------------------------------
def leave_behind(post: Post, job_status: str, **post_fields: Any) -> None:
    long_ago = timezone.now() - timedelta(hours=1)
    Post.objects.filter(pk=post.pk).update(publish_at=long_ago, **post_fields)
    Job.objects.filter(pk=publish_job(post).pk).update(
        status=job_status, last_error="gave up: the lease expired on all 6 attempts"
    )


@pytest.mark.django_db
def test_reconcile_fails_a_post_whose_job_gave_up_and_tells_the_admins(
    bot: FakeTelegramServer,
) -> None:
    scheduled, publishing = make_due_post("a"), make_due_post("b")
    leave_behind(scheduled, JobStatus.FAILED)
    leave_behind(
        publishing,
        JobStatus.FAILED,
        status=PostStatus.PUBLISHING,
        attempt_deadline=timezone.now() - timedelta(hours=1),
    )
    assert posts_reconcile() == 2
    scheduled.refresh_from_db()
    publishing.refresh_from_db()
    assert (scheduled.status, scheduled.outcome_unknown) == (PostStatus.FAILED, False)
    assert "lease expired on all 6 attempts" in scheduled.last_error
    assert (publishing.status, publishing.outcome_unknown) == (PostStatus.FAILED, True)
    assert len([t for t in admin_notices(bot) if "its publication job" in t]) == 2
    assert posts_reconcile() == 0


@pytest.mark.django_db
def test_reconcile_requeues_a_post_whose_job_was_cancelled(bot: FakeTelegramServer) -> None:
    post = make_due_post()
    leave_behind(post, JobStatus.CANCELLED)
    fresh = make_due_post("not stuck: its job is queued")
    assert posts_reconcile() == 1
    assert publish_job(post).status == JobStatus.QUEUED
    run_due("w1")
    post.refresh_from_db()
    fresh.refresh_from_db()
    assert post.status == fresh.status == PostStatus.PUBLISHED
    assert len(channel_sends(bot)) == 2


@pytest.mark.django_db
def test_a_schedule_made_while_the_old_job_ends_a_run_with_nothing_to_do_is_kept(
    bot: FakeTelegramServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The job was claimed just before the operator put the post back to draft; its run finds
    a draft, and the operator schedules the post again before that run ends. The new schedule
    gets a job of its own instead of being ended with the old one."""
    post = make_due_post()
    services.post_unschedule(post_id=post.pk)
    Job.objects.filter(pk=publish_job(post).pk).update(status=JobStatus.QUEUED)  # claimed before
    soon = timezone.now() + timedelta(minutes=5)
    original = publishing._get

    def operator_schedules_meanwhile(post_id: int) -> Any:
        services.post_schedule(post_id=post_id, publish_at=soon)
        return original(post_id)

    monkeypatch.setattr(publishing, "_get", operator_schedules_meanwhile)
    assert run_due("w1") == 1
    monkeypatch.setattr(publishing, "_get", original)
    job = publish_job(post)
    assert job.status == JobStatus.QUEUED and job.next_attempt == soon
    make_due(post)
    assert run_due("w1") == 1
    post.refresh_from_db()
    assert post.status == PostStatus.PUBLISHED and len(channel_sends(bot)) == 1


@pytest.mark.django_db
def test_reconcile_with_no_grace_takes_a_post_due_just_now(bot: FakeTelegramServer) -> None:
    post = make_due_post()
    Job.objects.filter(pk=publish_job(post).pk).update(status=JobStatus.CANCELLED)
    Post.objects.filter(pk=post.pk).update(publish_at=timezone.now() - timedelta(seconds=1))
    assert posts_reconcile() == 0  # within the default grace
    assert posts_reconcile(grace=timedelta(0)) == 1  # zero is a grace too, not "the default"
