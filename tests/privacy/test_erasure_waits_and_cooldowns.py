"""Erasure, exports and cooldowns: a ban queued between the erasure's check and its
deletions is kept (the erasure waits); a support answer waiting for its retry is not sent to an
erased user's anonymous id; manage.py export_user audits only an export it writes; /stats that
did not answer gives its cooldown back. Each test failed on the code before."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from django.db import OperationalError

from tests.conftest import OWNER_ID
from tests.fakes.telegram import FakeTelegramServer
from tests.faults import fail_once_in
from tests.support.helpers import USER, message, sent


# --- (3) check-then-erase race ---------------------------------------------------------------
@pytest.mark.django_db(transaction=True)
def test_a_ban_queued_between_the_blocker_check_and_the_erasure_is_not_deleted(
    bot: FakeTelegramServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``erase_user`` asks ``erasure_blockers`` first and starts the run afterwards: a
    moderator's ban of the member that hits Telegram's 429 in between queues its
    moderation.act job, which the erasure then deletes (the member escapes the ban by
    /forgetme, the very thing the blocker exists to prevent)."""
    from telegram_bot import privacy
    from telegram_bot.audit import Actor
    from telegram_bot.jobs.models import Job
    from tests.privacy.seed import OTHER
    from tests.privacy.seed import USER as MEMBER
    from tests.privacy.test_erasure_of_data_in_flight_and_shared import moderation_job

    real_start = privacy.start_run
    queued: list[Job] = []

    def ban_arrives_meanwhile(store: Any, user_id: int) -> Any:
        queued.append(moderation_job(MEMBER, OTHER, 4242, "ban"))  # the 429'd ban, queued now
        return real_start(store, user_id)

    monkeypatch.setattr(privacy, "start_run", ban_arrives_meanwhile)
    # A fixed erasure may defer (ErasureDeferred): what matters is the ban.
    with contextlib.suppress(privacy.ErasureDeferred):
        privacy.erase_user(MEMBER, actor=Actor(None, "site:operator"), source="admin")
    [ban] = queued
    assert Job.objects.filter(pk=ban.pk).exists(), "the pending ban was deleted by the erasure"


# --- (4) a queued support.deliver job after the erasure ------------------------------------------
def test_a_support_retry_job_after_the_erasure_sends_nothing_to_the_anonymous_id(
    bot: FakeTelegramServer, post_update: Any, settings: Any
) -> None:
    from django.utils import timezone

    from telegram_bot.audit import Actor
    from telegram_bot.jobs.models import Job, JobStatus
    from telegram_bot.jobs.runner import run_due
    from telegram_bot.models import BlockedChat, DeliveryFailure
    from telegram_bot.privacy import ANONYMOUS_BASE, erase_user
    from tests.support.helpers import last_message_id, reply_to

    settings.JOB_RETRY_BASE_DELAY = 0.01
    settings.JOB_RETRY_JITTER = 0
    post_update(message("/support it is broken"))
    notice = last_message_id(bot, OWNER_ID, "#1")
    bot.fail_next("sendMessage", status=500)  # the answer to the user: retried by a job
    post_update(reply_to(notice, "Try turning it off and on.", user_id=OWNER_ID))
    job = Job.objects.get(kind="support.deliver")
    assert job.status == JobStatus.QUEUED

    erase_user(USER, actor=Actor(None, "site:operator"), source="admin")
    Job.objects.filter(status=JobStatus.QUEUED).update(next_attempt=timezone.now())
    run_due("w")
    to_anonymous = [
        call.params
        for call in bot.calls
        if "chat_id" in call.params and int(call.params["chat_id"]) >= ANONYMOUS_BASE
    ]
    assert to_anonymous == [], f"sent to the erased user's anonymous id: {to_anonymous}"
    assert not DeliveryFailure.objects.filter(chat_id__gte=ANONYMOUS_BASE).exists()
    assert not BlockedChat.objects.filter(chat_id__gte=ANONYMOUS_BASE).exists()


def test_an_answer_to_an_erased_users_ticket_is_sent_to_nobody(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    """The erasure leaves the ticket open; an answer an operator writes on it afterwards (the
    admin site's ticket page) was sent to the anonymous id (a bogus call, a failure row for
    that id)."""
    import uuid

    from support import delivery, services
    from support.models import Ticket
    from support.validation import Content
    from telegram_bot.audit import Actor
    from telegram_bot.models import DeliveryFailure
    from telegram_bot.privacy import ANONYMOUS_BASE, erase_user

    post_update(message("/support it is broken"))
    erase_user(USER, actor=Actor(None, "site:operator"), source="admin")
    entry, _ = services.ticket_reply(
        ticket_id=Ticket.objects.get().pk,
        author=services.Author("operator"),
        origin=services.Origin(form_token=uuid.uuid4()),
        content=Content(kind="text", text="Try turning it off and on."),
    )
    assert delivery.deliver(entry).delivered is None  # nothing was due: nobody to send to
    to_anonymous = [
        call.params
        for call in bot.calls
        if "chat_id" in call.params and int(call.params["chat_id"]) >= ANONYMOUS_BASE
    ]
    assert to_anonymous == [], f"sent to the erased user's anonymous id: {to_anonymous}"
    assert not DeliveryFailure.objects.filter(chat_id__gte=ANONYMOUS_BASE).exists()


# --- (7) export_user audits an export it then refuses to write --------------------------------
@pytest.mark.django_db
def test_export_user_refused_for_an_existing_file_leaves_no_audited_export(
    memory_store: Any, tmp_path: Any
) -> None:
    from django.core.management import call_command
    from django.core.management.base import CommandError

    from telegram_bot.models import AuditEntry
    from telegram_bot.privacy import EXPORT_ACTION

    target = tmp_path / "taken.json"
    target.write_text("someone else's file\n")
    with pytest.raises(CommandError, match="exists"):
        call_command("export_user", "777001", output=str(target))
    assert target.read_text() == "someone else's file\n"
    exports = list(
        AuditEntry.objects.filter(action=EXPORT_ACTION).values("target_id", "actor_name")
    )
    assert exports == [], f"the audit log says the data was exported: {exports}"


# --- (8) /stats takes the chat's cooldown before it answers ------------------------------------
GROUP = -100888


def _stats_update() -> dict[str, Any]:
    from tests.builders import make_message_update

    return make_message_update("/stats", chat_id=GROUP, user_id=2002)


def test_stats_whose_reply_met_a_database_blip_is_answered_by_the_redelivery(
    bot: FakeTelegramServer, post_update: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The summary's query meets a database blip: 503, Telegram re-delivers (Retry-After
    10 s, inside the 30 s cooldown). The re-delivery finds the cooldown taken, answers
    nothing and marks the update done: /stats was never answered."""
    from stats import handlers

    fail_once_in(
        monkeypatch, handlers, "group_summary_text", OperationalError("database went away")
    )
    update = _stats_update()
    assert post_update(update).status_code == 503
    assert post_update(update)["X-Update-Outcome"] == "processed"
    assert len(sent(bot, chat_id=GROUP)) == 1, "/stats was never answered"


def test_stats_whose_reply_failed_is_answered_by_its_dead_letter_replay(
    bot: FakeTelegramServer, post_update: Any, admin_client: Any
) -> None:
    update = _stats_update()
    bot.fail_next("sendMessage", status=500)
    assert post_update(update)["X-Update-Outcome"] == "dead_letter"
    page = admin_client.post(f"/admin/dead-letters/{update['update_id']}/replay/", follow=True)
    assert "replayed: processed" in page.content.decode()  # and the letter is dropped
    assert len(sent(bot, chat_id=GROUP)) == 1, "the replay said processed and sent nothing"


def test_stats_gives_back_only_its_own_cooldown(memory_store: Any) -> None:
    """A reply slower than the cooldown fails after another run took the chat's next one:
    giving back must not delete that one (a plain delete did)."""
    from stats.services import stats_command_cooldown_give_back, stats_command_cooldown_take

    mine = stats_command_cooldown_take(store=memory_store, chat_id=-100777)
    assert mine is not None
    assert stats_command_cooldown_take(store=memory_store, chat_id=-100777) is None
    memory_store.set("lock:stats_cmd:-100777", "a later run's", ttl_ms=30_000)  # mine ran out
    stats_command_cooldown_give_back(store=memory_store, chat_id=-100777, token=mine)
    assert memory_store.get("lock:stats_cmd:-100777") == "a later run's"
