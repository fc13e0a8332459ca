"""Re-delivery, Telegram's flood control, and two moderators warning at the limit at once
(real threads, on SQLite and on PostgreSQL: whichever DATABASE_URL the run uses)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connections
from django.utils import timezone

from moderation.models import Warning
from telegram_bot.jobs.models import Job, JobStatus
from telegram_bot.jobs.runner import run_due
from telegram_bot.models import AuditEntry
from telegram_bot.pipeline import idempotency
from telegram_bot.pipeline.process import Outcome, process_update
from telegram_bot.state import get_store
from tests.builders import make_callback_update, make_message_update
from tests.fakes.telegram import FakeTelegramServer
from tests.moderation.helpers import (
    CHAT_OWNER,
    MEMBER,
    MOD,
    answers,
    command,
    describe_group,
    member_message,
    ok_calls,
    run,
)


@pytest.mark.django_db
def test_a_redelivered_ban_bans_once_and_records_once(bot: FakeTelegramServer) -> None:
    describe_group(bot)
    update = command("/ban spam", reply_to=member_message())
    assert run(update) == Outcome.PROCESSED
    assert run(update) == Outcome.DUPLICATE  # the done-marker
    # A crash after the ban but before the done-marker: the update comes back and runs again.
    idempotency.forget(get_store(), update["update_id"])
    assert run(update) == Outcome.PROCESSED
    assert len(ok_calls(bot, "banChatMember")) == 1
    assert AuditEntry.objects.filter(action="ban").count() == 1


@pytest.mark.django_db
def test_a_redelivered_warn_warns_once(bot: FakeTelegramServer) -> None:
    describe_group(bot)
    update = command("/warn", reply_to=member_message())
    run(update)
    idempotency.forget(get_store(), update["update_id"])
    run(update)
    assert Warning.objects.count() == 1
    assert AuditEntry.objects.filter(action="warn").count() == 1
    assert answers(bot) == ["Mallory is warned (1/3).", "Mallory is warned (1/3)."]


@pytest.mark.django_db
def test_flood_control_hands_the_ban_to_a_job_that_honours_retry_after(
    bot: FakeTelegramServer,
) -> None:
    describe_group(bot)
    bot.fail_next("banChatMember", status=429, retry_after=7)
    started = timezone.now()
    run(command("/ban 1d spam", reply_to=member_message()))
    assert answers(bot) == ["Telegram asks me to slow down: Mallory will be banned in 7s."]
    assert not AuditEntry.objects.exists()
    job = Job.objects.get(kind="moderation.act")
    assert (job.next_attempt - started).total_seconds() >= 7
    assert run_due("test-worker") == 0  # not due yet
    Job.objects.filter(pk=job.pk).update(next_attempt=timezone.now())
    assert run_due("test-worker") == 1
    assert Job.objects.get(pk=job.pk).status == JobStatus.SUCCEEDED
    assert bot.chat_member(-100777, MEMBER)["status"] == "kicked"
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.actor_id, entry.reason, entry.detail) == (
        "ban",
        MOD,
        "spam",
        "after retry",
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(60)
def test_two_moderators_warning_at_the_limit_trigger_one_mute(bot: FakeTelegramServer) -> None:
    describe_group(bot)
    target = member_message()
    run(command("/warn one", reply_to=target))
    run(command("/warn two", reply_to=target))  # the limit is 3: the next one triggers
    rounds = 3
    for _ in range(rounds):
        updates = [
            command("/warn a", sender=MOD, reply_to=target),
            command("/warn b", sender=CHAT_OWNER, reply_to=target),
        ]
        barrier = threading.Barrier(2)
        outcomes: list[Any] = []

        def work(
            update: dict[str, Any],
            barrier: threading.Barrier = barrier,
            outcomes: list[Any] = outcomes,
        ) -> None:
            try:
                barrier.wait()
                outcomes.append(process_update(update))
            finally:
                connections.close_all()

        threads = [threading.Thread(target=work, args=(u,)) for u in updates]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert outcomes == [Outcome.PROCESSED, Outcome.PROCESSED]
    # Each round: one of the two warnings reaches 3 and mutes; the other starts a new count.
    # Rounds: (2+2 -> 3 mute, 1), (1+2 -> 2, 3 mute)... exactly one trigger per 3 warnings.
    total = 2 + 2 * rounds
    assert Warning.objects.count() == total
    triggered = Warning.objects.filter(triggered=True).count()
    assert triggered == total // 3
    assert len(ok_calls(bot, "restrictChatMember")) == triggered
    assert AuditEntry.objects.filter(action="mute", source="auto").count() == triggered


@pytest.mark.django_db(transaction=True)
def test_a_member_whose_ban_waits_on_flood_control_cannot_escape_it_by_forgetme(
    bot: FakeTelegramServer,
) -> None:
    """/forgetme deletes the jobs about the member: before, it deleted the queued ban too."""
    describe_group(bot)
    bot.fail_next("banChatMember", status=429, retry_after=7)
    run(command("/ban spam", reply_to=member_message()))
    job = Job.objects.get(kind="moderation.act")

    assert run(make_message_update("/forgetme", chat_id=MEMBER, user_id=MEMBER)) == (
        Outcome.PROCESSED
    )
    [[erase], _cancel] = bot.calls_to("sendMessage")[-1].params["reply_markup"]["inline_keyboard"]
    assert run(make_callback_update(erase["callback_data"], user_id=MEMBER)) == Outcome.PROCESSED
    told = bot.calls_to("editMessageText")[-1].params["text"]
    assert told.startswith("Nothing was erased yet")
    assert not AuditEntry.objects.filter(action="privacy_erase").exists()

    Job.objects.filter(pk=job.pk).update(next_attempt=timezone.now())
    assert run_due("test-worker") == 1
    assert bot.chat_member(-100777, MEMBER)["status"] == "kicked"
