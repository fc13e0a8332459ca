"""Notifications to several admins are isolated from each other."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from django.utils import timezone

from telegram_bot.jobs.models import Job, JobStatus
from telegram_bot.jobs.runner import run_due
from telegram_bot.models import BlockedChat, BotAdmin, DeliveryFailure
from telegram_bot.notifications import ADMIN_NOTICE_JOB, FollowUp, notify_admins
from tests.builders import make_message_update
from tests.conftest import OWNER_ID
from tests.fakes.telegram import FakeTelegramServer


def test_one_admin_who_blocked_the_bot_does_not_stop_the_others(bot: FakeTelegramServer) -> None:
    for admin_id in (11, 12, 13):
        BotAdmin.objects.create(telegram_id=admin_id)
    bot.block_chat(12)
    report = notify_admins("New ticket #1", purpose="test")
    assert sorted(report.sent) == sorted([OWNER_ID, 11, 13])
    assert list(report.failed) == [12]
    assert "blocked" in report.failed[12]
    failure = DeliveryFailure.objects.get()
    assert (failure.chat_id, failure.purpose) == (12, "test")
    assert BlockedChat.objects.filter(chat_id=12).exists()
    delivered = sorted(c.params["chat_id"] for c in bot.calls_to("sendMessage") if not c.failed)
    assert delivered == sorted([OWNER_ID, 11, 13])


def test_a_blocked_admin_is_skipped_until_they_write_again(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    BotAdmin.objects.create(telegram_id=12)
    bot.block_chat(12)
    notify_admins("one", purpose="test")
    bot.unblock_chat(12)
    report = notify_admins("two", purpose="test")
    assert report.skipped == [12]
    post_update(make_message_update("/start", chat_id=12, user_id=12))
    assert not BlockedChat.objects.filter(chat_id=12).exists()
    assert 12 in notify_admins("three", purpose="test").sent


def test_a_server_error_for_one_admin_is_recorded_and_the_rest_proceed(
    bot: FakeTelegramServer,
) -> None:
    BotAdmin.objects.create(telegram_id=11)
    bot.fail_next("sendMessage", status=500, description="Internal Server Error")
    report = notify_admins("hello", purpose="test")
    assert len(report.failed) == 1 and len(report.sent) == 1
    assert not BlockedChat.objects.exists()  # a 500 is not a permanent refusal


# --- transient failures are retried by a job -------------------------------------------------
@pytest.fixture
def fast_retries(settings: Any) -> None:
    settings.JOB_RETRY_BASE_DELAY = 0.01
    settings.JOB_RETRY_MAX_DELAY = 0.02
    settings.JOB_RETRY_JITTER = 0


def run_notice_jobs() -> int:
    Job.objects.filter(status=JobStatus.QUEUED).update(next_attempt=timezone.now())
    return run_due("test-worker")


def notices_to(bot: FakeTelegramServer, chat_id: int) -> list[str]:
    return [
        c.params["text"]
        for c in bot.calls_to("sendMessage")
        if not c.failed and c.params["chat_id"] == chat_id
    ]


def dead_port() -> int:
    """A loopback port nobody listens on: a connection to it is refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_server_error_is_retried_by_a_job_until_the_notice_arrives(
    bot: FakeTelegramServer, fast_retries: None
) -> None:
    BotAdmin.objects.create(telegram_id=11)
    bot.fail_next("sendMessage", status=500)  # the owner is notified first
    report = notify_admins("New ticket #1", purpose="test")
    assert report.retrying == [OWNER_ID] and list(report.sent) == [11]
    assert not DeliveryFailure.objects.exists()  # not a failure while it is being retried
    job = Job.objects.get(kind=ADMIN_NOTICE_JOB)
    bot.fail_next("sendMessage", status=502, description="Bad Gateway")  # still down
    assert run_notice_jobs() == 1
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED and "502" in job.last_error
    assert notices_to(bot, OWNER_ID) == []
    assert run_notice_jobs() == 1  # Telegram is back
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED
    assert notices_to(bot, OWNER_ID) == ["New ticket #1"]
    assert notices_to(bot, 11) == ["New ticket #1"]
    assert run_notice_jobs() == 0
    assert not DeliveryFailure.objects.exists()


def test_a_notice_that_never_left_the_machine_is_sent_once_telegram_is_reachable(
    bot: FakeTelegramServer, fast_retries: None, settings: Any
) -> None:
    settings.TELEGRAM_API_BASE_URL = f"http://127.0.0.1:{dead_port()}"
    report = notify_admins("New ticket #2", purpose="test")
    assert report.retrying == [OWNER_ID] and not report.sent
    assert not DeliveryFailure.objects.exists()
    assert bot.calls_to("sendMessage") == []
    settings.TELEGRAM_API_BASE_URL = bot.base_url  # the network is back
    assert run_notice_jobs() == 1
    assert notices_to(bot, OWNER_ID) == ["New ticket #2"]


def test_a_notice_whose_retries_run_out_is_recorded_as_failed_without_a_notice_about_it(
    bot: FakeTelegramServer, fast_retries: None, settings: Any
) -> None:
    settings.JOB_MAX_RETRIES = 1
    bot.fail_next("sendMessage", status=500, times=3)
    assert notify_admins("hello", purpose="test").retrying == [OWNER_ID]
    for _ in range(2):
        assert run_notice_jobs() == 1
    job = Job.objects.get(kind=ADMIN_NOTICE_JOB)
    assert (job.status, job.attempts) == (JobStatus.FAILED, 2)
    failure = DeliveryFailure.objects.get()
    assert (failure.chat_id, failure.purpose) == (OWNER_ID, "test")
    assert not BlockedChat.objects.exists()
    assert run_notice_jobs() == 0
    assert len(bot.calls_to("sendMessage")) == 3  # no "job failed" notice about the notice


def test_a_notice_that_may_have_arrived_is_recorded_and_not_sent_again(
    bot: FakeTelegramServer, fast_retries: None
) -> None:
    bot.fail_next("sendMessage", drop_connection=True)
    report = notify_admins("hello", purpose="test")
    assert report.retrying == [] and OWNER_ID in report.failed
    failure = DeliveryFailure.objects.get()
    assert failure.description.startswith("outcome unknown")
    assert not Job.objects.exists()
    assert len(bot.calls_to("sendMessage")) == 1


def test_a_follow_up_of_an_unknown_job_kind_is_refused_before_anything_is_sent(
    bot: FakeTelegramServer,
) -> None:
    with pytest.raises(ValueError, match="unknown job kind 'nope\\.linked'"):
        notify_admins("hello", purpose="test", on_sent=FollowUp("nope.linked", {}))
    assert bot.calls_to("sendMessage") == []
