"""An answer whose delivery Telegram (or a proxy) asks to retry absurdly late."""

from __future__ import annotations

from typing import Any

import pytest

from support.models import TicketMessage
from telegram_bot.jobs.models import Job, JobStatus
from tests.conftest import OWNER_ID
from tests.fakes.telegram import FakeTelegramServer
from tests.support.helpers import last_message_id, message, reply_to


@pytest.mark.django_db
def test_a_huge_retry_after_on_an_answer_still_leaves_it_to_the_retry_job(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    """Telegram's ``retry_after`` is taken as sent (any JSON number) and added to now for the
    support.deliver job (``_schedule_retry`` -> ``job_retry_later``): a value past year 9999
    raises OverflowError after the entry was already recorded as "retrying automatically",
    so the admin's answer goes to the dead letters, no job is queued and the answer is never
    retried, while the ticket says it will be."""
    post_update(message("/support it is broken"))
    notice = last_message_id(bot, OWNER_ID, "#1")
    bot.fail_next("sendMessage", status=429, retry_after=10**12)
    update = reply_to(notice, "Try turning it off and on.", user_id=OWNER_ID)

    outcome = post_update(update)["X-Update-Outcome"]

    answer = TicketMessage.objects.get(sender=TicketMessage.Sender.ADMIN)
    jobs = Job.objects.filter(kind="support.deliver", status=JobStatus.QUEUED)
    assert outcome == "processed", f"the admin's answer update ended as {outcome}"
    assert jobs.exists(), f"no retry job, yet the entry says: {answer.delivery_error!r}"
