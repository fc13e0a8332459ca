"""A 429 or a 5xx from approve is retried through the job policy, not in the webhook request,
and the request is approved exactly once in the end."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone

from community.records import DECIDING, DONE, PENDING
from telegram_bot.jobs.models import Job, JobStatus
from telegram_bot.jobs.runner import run_due
from telegram_bot.models import BotAdmin
from tests.builders import make_join_request_update
from tests.community.helpers import (
    alerts,
    button_data,
    copy_of,
    edits_to,
    make_jobs_due,
    notifications,
    press_update,
    record_of,
    succeeded,
)
from tests.conftest import OWNER_ID
from tests.fakes.telegram import FakeTelegramServer


@pytest.fixture
def fast_retries(settings: Any) -> None:
    settings.JOB_RETRY_BASE_DELAY = 0.01
    settings.JOB_RETRY_MAX_DELAY = 0.02
    settings.JOB_RETRY_JITTER = 0


def join_and_notify(bot: FakeTelegramServer, post_update: Any) -> dict[str, str]:
    post_update(make_join_request_update(user_id=2002, chat_id=-100555))
    return button_data(notifications(bot)[0])


def test_it_retries_a_429_then_a_5xx_in_a_job_and_approves_once(
    bot: FakeTelegramServer, post_update: Any, fast_retries: None
) -> None:
    BotAdmin.objects.create(telegram_id=11)
    data = join_and_notify(bot, post_update)
    bot.fail_next("approveChatJoinRequest", status=429, retry_after=3)
    before = timezone.now()
    press = press_update(data["Approve"], user_id=OWNER_ID, name="Olga")
    assert post_update(press)["X-Update-Outcome"] == "processed"

    # One attempt in the webhook; the rest belongs to the job, due after retry_after.
    assert len(bot.calls_to("approveChatJoinRequest")) == 1
    # The decision's watchdog became the retry (the cancelled one and this one, by one key).
    job = Job.objects.get(kind="community.decide", status=JobStatus.QUEUED)
    assert (job.next_attempt - before).total_seconds() >= 3
    answer = bot.calls_to("answerCallbackQuery")[-1].params
    assert answer["text"] == "Telegram is busy: the decision will be retried."
    for admin_id in (OWNER_ID, 11):
        [edit] = edits_to(bot, admin_id)
        assert "Approve by Olga at " in edit.params["text"] and "retrying" in edit.params["text"]
        assert "reply_markup" not in edit.params
    record = record_of(data["Approve"])
    assert record is not None and record.status == DECIDING
    assert run_due("test-worker") == 0  # not before Telegram allows

    # Meanwhile another admin cannot decide it a second time.
    post_update(press_update(data["Decline"], user_id=11, name="Ivan"))
    alert = alerts(bot)[-1]
    assert alert.startswith("Already decided by Olga") and alert.endswith("approve, in progress.")

    bot.fail_next("approveChatJoinRequest", status=502, description="Bad Gateway")
    make_jobs_due()
    assert run_due("test-worker") == 1
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED and "502" in job.last_error

    make_jobs_due()
    assert run_due("test-worker") == 1
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED
    assert len(bot.calls_to("approveChatJoinRequest")) == 3
    assert len(succeeded(bot, "approveChatJoinRequest")) == 1
    assert bot.calls_to("declineChatJoinRequest") == []
    for admin_id in (OWNER_ID, 11):
        assert "Approved by Olga at " in edits_to(bot, admin_id)[-1].params["text"]
    record = record_of(data["Approve"])
    assert record is not None and record.status == DONE
    make_jobs_due()
    assert run_due("test-worker") == 0


def test_it_puts_the_request_back_when_the_retries_run_out(
    bot: FakeTelegramServer, post_update: Any, fast_retries: None, settings: Any
) -> None:
    settings.JOB_MAX_RETRIES = 1
    data = join_and_notify(bot, post_update)
    bot.fail_next("approveChatJoinRequest", times=3, status=500)
    post_update(press_update(data["Approve"], user_id=OWNER_ID, name="Olga"))
    for _ in range(2):
        make_jobs_due()
        run_due("test-worker")
    job = Job.objects.exclude(status=JobStatus.CANCELLED).get(kind="community.decide")
    assert job.status == JobStatus.FAILED
    assert len(bot.calls_to("approveChatJoinRequest")) == 3
    copy = edits_to(bot, OWNER_ID)[-1]
    assert "Approve by Olga failed" in copy.params["text"]
    assert "still pending" in copy.params["text"]
    assert button_data(copy) == data
    record = record_of(data["Approve"])
    assert record is not None and record.status == PENDING
    texts = [call.params["text"] for call in succeeded(bot, "sendMessage")]
    assert any(text.startswith("Job community.decide #") for text in texts)

    post_update(
        press_update(
            data["Approve"], user_id=OWNER_ID, message_id=copy_of(data["Approve"], OWNER_ID)
        )
    )
    assert len(succeeded(bot, "approveChatJoinRequest")) == 1


def test_a_network_error_in_the_webhook_is_retried_by_the_job(
    bot: FakeTelegramServer, post_update: Any, fast_retries: None
) -> None:
    data = join_and_notify(bot, post_update)
    bot.fail_next("approveChatJoinRequest", drop_connection=True)
    post_update(press_update(data["Approve"], user_id=OWNER_ID))
    assert Job.objects.filter(kind="community.decide", status=JobStatus.QUEUED).exists()
    make_jobs_due()
    run_due("test-worker")
    assert len(succeeded(bot, "approveChatJoinRequest")) == 1


def test_an_admin_copy_lost_to_a_server_error_arrives_late_and_shows_the_decision(
    bot: FakeTelegramServer, post_update: Any, fast_retries: None
) -> None:
    BotAdmin.objects.create(telegram_id=11)
    bot.fail_next("sendMessage", status=500)  # the owner's copy (the owner is notified first)
    data = join_and_notify(bot, post_update)
    assert [c.params["chat_id"] for c in notifications(bot)] == [11]
    post_update(press_update(data["Approve"], user_id=11, name="Ivan"))
    assert len(succeeded(bot, "approveChatJoinRequest")) == 1
    make_jobs_due()
    run_due("test-worker")  # the owner's copy again, then keeping it with the others
    assert len([c for c in notifications(bot) if c.params["chat_id"] == OWNER_ID]) == 1
    # Decided while it was on its way: the copy it became is edited to say so, without buttons.
    [edit] = edits_to(bot, OWNER_ID)
    assert edit.params["message_id"] == copy_of(data["Approve"], OWNER_ID)
    assert "Approved by Ivan at " in edit.params["text"] and "reply_markup" not in edit.params
    assert len(succeeded(bot, "approveChatJoinRequest")) == 1
