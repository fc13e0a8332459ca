"""An answer that Telegram refuses for a moment (429, 5xx) is retried by a job with backoff
and reaches the user exactly once; a permanent refusal stops the retries."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone

from support.models import TicketMessage
from telegram_bot.jobs.models import Job, JobStatus
from telegram_bot.jobs.runner import run_due
from telegram_bot.pipeline import idempotency
from telegram_bot.state import KVStore
from tests.conftest import OWNER_ID
from tests.fakes.telegram import FakeTelegramServer
from tests.support.helpers import USER, last_message_id, message, reply_to, texts

ANSWER = "Support · ticket #1\n\nTry turning it off and on."


@pytest.fixture
def fast_retries(settings: Any) -> None:
    settings.JOB_RETRY_BASE_DELAY = 0.01
    settings.JOB_RETRY_MAX_DELAY = 0.02
    settings.JOB_RETRY_JITTER = 0


def answer_with_failure(bot: FakeTelegramServer, post_update: Any, **fault: Any) -> dict[str, Any]:
    post_update(message("/support it is broken"))
    notice = last_message_id(bot, OWNER_ID, "#1")
    bot.fail_next("sendMessage", **fault)  # the next sendMessage is the answer to the user
    update = reply_to(notice, "Try turning it off and on.", user_id=OWNER_ID)
    assert post_update(update)["X-Update-Outcome"] == "processed"
    return update


def make_jobs_due() -> None:
    Job.objects.filter(status=JobStatus.QUEUED).update(next_attempt=timezone.now())


def test_a_server_error_is_retried_by_a_job_and_the_answer_arrives_once(
    bot: FakeTelegramServer, post_update: Any, memory_store: KVStore, fast_retries: None
) -> None:
    update = answer_with_failure(bot, post_update, status=500)
    assert texts(bot, OWNER_ID)[-1] == (
        "Not delivered to the user of ticket #1 yet: Telegram sendMessage failed: 500 Internal "
        "Server Error. It is retried automatically."
    )
    entry = TicketMessage.objects.get(sender="admin")
    assert entry.delivery_state == "not delivered" and "retrying" in entry.delivery_error
    job = Job.objects.get(kind="support.deliver")
    assert job.status == JobStatus.QUEUED and job.payload == {"entry_id": entry.pk}
    # A re-delivered update does not send it a second time behind the job's back.
    idempotency.forget(memory_store, update["update_id"])
    post_update(update)
    assert ANSWER not in texts(bot, USER)
    make_jobs_due()
    assert run_due("test-worker") == 1
    assert texts(bot, USER).count(ANSWER) == 1
    entry.refresh_from_db()
    assert entry.delivery_state == "delivered" and entry.delivery_error == ""
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED
    make_jobs_due()
    assert run_due("test-worker") == 0


def test_flood_control_is_waited_out(
    bot: FakeTelegramServer, post_update: Any, fast_retries: None
) -> None:
    before = timezone.now()
    answer_with_failure(bot, post_update, status=429, retry_after=5)
    job = Job.objects.get(kind="support.deliver")
    assert (job.next_attempt - before).total_seconds() >= 5
    assert run_due("test-worker") == 0  # not before Telegram allows
    make_jobs_due()
    assert run_due("test-worker") == 1
    assert texts(bot, USER).count(ANSWER) == 1


def test_retries_that_keep_failing_give_up_and_the_admins_are_told(
    bot: FakeTelegramServer, post_update: Any, fast_retries: None, settings: Any
) -> None:
    settings.JOB_MAX_RETRIES = 1
    answer_with_failure(bot, post_update, status=502, description="Bad Gateway")
    for _ in range(2):
        bot.fail_next("sendMessage", status=502, description="Bad Gateway")
        make_jobs_due()
        # One run per failure: the 10 ms retry may fall due again within a slow run.
        assert run_due("test-worker", limit=1) == 1
    job = Job.objects.get(kind="support.deliver")
    assert job.status == JobStatus.FAILED
    entry = TicketMessage.objects.get(sender="admin")
    assert entry.delivery_error.endswith("(gave up retrying)")
    assert texts(bot, OWNER_ID)[-1].startswith("Job support.deliver")
    assert ANSWER not in texts(bot, USER)


def test_a_user_who_blocks_the_bot_meanwhile_stops_the_retries(
    bot: FakeTelegramServer, post_update: Any, fast_retries: None
) -> None:
    answer_with_failure(bot, post_update, status=500)
    bot.block_chat(USER)
    make_jobs_due()
    assert run_due("test-worker") == 1
    job = Job.objects.get(kind="support.deliver")
    assert job.status == JobStatus.FAILED and "blocked" in job.last_error
    entry = TicketMessage.objects.get(sender="admin")
    assert "blocked" in entry.delivery_error and "retrying" not in entry.delivery_error
