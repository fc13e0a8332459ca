"""Replays and erasure after failures: a replay that fails again keeps its letter; a ban committed
after the erasure's check is not deleted; a deferred resume keeps the crashed run; the admins hear
of a ticket message when the database failed before the notice. Each failed before."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from tests.fakes.telegram import FakeTelegramServer
from tests.faults import fail_once_in
from tests.support.helpers import sent


# --- 1. a replay whose marking fails loses the operator's dead letter -------------------------
def test_a_replay_that_fails_again_and_cannot_be_marked_keeps_its_dead_letter(
    bot: FakeTelegramServer,
    post_update: Any,
    admin_client: Any,
    memory_store: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """d3c02e6 drops the letter when mark_dead fails, reasoning that "Telegram delivers the
    update again". A replay is not a Telegram delivery: nobody delivers it again. The
    operator replays a letter, the handler fails again, the KV store blips on mark_dead:
    the page says "it stays here", but the letter (the only copy of the update) is gone."""
    from telegram_bot.errors import StateUnavailableError
    from telegram_bot.pipeline import idempotency
    from tests.builders import make_message_update

    chat = 4331
    update = make_message_update("/start", chat_id=chat, user_id=chat)
    bot.fail_next("sendMessage", status=400, description="Bad Request: chat not found")
    assert post_update(update)["X-Update-Outcome"] == "dead_letter"
    key = f"dlq:{update['update_id']}"
    assert memory_store.get(key) is not None

    fail_once_in(monkeypatch, idempotency, "mark_dead", StateUnavailableError("redis went away"))
    bot.fail_next("sendMessage", status=400, description="Bad Request: chat not found")
    page = admin_client.post(f"/admin/dead-letters/{update['update_id']}/replay/", follow=True)
    assert "it stays here" in page.content.decode()
    assert memory_store.get(key) is not None, "the replayed letter was dropped: the update is lost"
    assert sent(bot, chat_id=chat) == []


# --- 2. the core's second blocker check still races the job deletion --------------------------
def test_a_ban_committed_after_the_cores_blocker_check_is_not_deleted(
    bot: FakeTelegramServer, memory_store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """9506fa0 moves the check into privacy.core.erase's transaction, but it is still a
    check-then-act: ``erasure_blockers`` is one query, ``_jobs_mentioning`` a later one, and
    at READ COMMITTED (and with no lock the moderation path takes) a ban that meets a 429 and
    commits its moderation.act job between the two is read by the second and deleted: the
    member escapes the ban through /forgetme. (Here the other process's commit is made right
    after the check returns.)"""
    from telegram_bot import privacy
    from telegram_bot.audit import Actor
    from telegram_bot.jobs.models import Job
    from telegram_bot.privacy import core as privacy_core
    from tests.privacy.seed import OTHER
    from tests.privacy.seed import USER as MEMBER
    from tests.privacy.test_erasure_of_data_in_flight_and_shared import moderation_job

    real = privacy_core.erasure_blockers
    queued: list[Job] = []

    def check_then_ban_commits(user_id: int) -> list[str]:
        reasons = real(user_id)
        if not queued:
            queued.append(moderation_job(MEMBER, OTHER, 4243, "ban"))
        return reasons

    monkeypatch.setattr(privacy_core, "erasure_blockers", check_then_ban_commits)
    with contextlib.suppress(privacy.ErasureDeferred):  # a fixed erasure may wait for the ban
        privacy.erase_user(MEMBER, actor=Actor(None, "site:operator"), source="admin")
    [ban] = queued
    assert Job.objects.filter(pk=ban.pk).exists(), "the pending ban was deleted by the erasure"


# --- 3. a deferral in the core's erase finishes (deletes) a resumed run -----------------------
def test_a_deferred_resume_keeps_the_anonymous_id_of_the_crashed_run(
    bot: FakeTelegramServer, memory_store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """erase_user promises: "after a crash, calling it again resumes with the same anonymous
    id and completes the work". An erasure crashed half-way (its run record holds anonymous id
    X, with which some apps already replaced the member). It is called again; a ban is
    queued between erase_user's check and the core's: the new ``except ErasureDeferred:
    finish_run`` deletes the crashed run's record and step markers, though this call did not
    start it. The next attempt draws a new anonymous id Y: the member's figures are split
    over two anonymous members (a period's member count goes up by one), and while the run
    record is gone ``erasure_running`` is False for writers the half-done erasure relies on."""
    from telegram_bot import privacy
    from telegram_bot.audit import Actor
    from telegram_bot.privacy import core as privacy_core
    from tests.privacy.seed import OTHER
    from tests.privacy.seed import USER as MEMBER
    from tests.privacy.test_erasure_of_data_in_flight_and_shared import moderation_job

    crashed = privacy.start_run(memory_store, MEMBER)  # the run a killed erasure left
    memory_store.set(crashed.marker("stats:day:2026-01-01"), 1)  # a step it had finished
    real = privacy_core.erasure_blockers
    queued: list[Any] = []

    def ban_arrives_meanwhile(user_id: int) -> list[str]:
        if not queued:
            queued.append(moderation_job(MEMBER, OTHER, 4244, "ban"))
        return real(user_id)

    monkeypatch.setattr(privacy_core, "erasure_blockers", ban_arrives_meanwhile)
    with pytest.raises(privacy.ErasureDeferred):
        privacy.erase_user(MEMBER, actor=Actor(None, "site:operator"), source="admin")
    assert privacy.erasure_running(memory_store, MEMBER), "the crashed run's record was deleted"
    resumed = privacy.start_run(memory_store, MEMBER)
    assert resumed.anonymous_id == crashed.anonymous_id, "the resume draws a new anonymous id"


# --- 4. a failed release of the admins' notice claim loses the notice for good ----------------
def test_admins_are_notified_when_the_database_failed_before_the_notice_and_at_its_release(
    bot: FakeTelegramServer, post_update: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """55562ca claimed the admins' notice before notify_admins, and gave the claim back when
    it failed before its first send (the admins' list: "the database failed"), with one more
    UPDATE on the same broken database, which failed too: the claim stayed, the 503's
    re-delivery took the notice as sent, and no admin ever heard of the ticket. Now the claim
    is taken inside notify_admins, after the admins are read: a failure there claims
    nothing."""
    from django.db import OperationalError

    from support.models import TicketMessage
    from telegram_bot import notifications
    from tests.conftest import OWNER_ID
    from tests.support.helpers import message

    fail_once_in(
        monkeypatch, notifications, "admin_ids", OperationalError("server closed the connection")
    )
    update = message("/support please help")
    assert post_update(update).status_code == 503
    assert sent(bot, chat_id=OWNER_ID) == []  # nothing went out to the admins
    assert post_update(update)["X-Update-Outcome"] == "processed"
    assert TicketMessage.objects.get().admins_notified_at is not None
    assert len(sent(bot, chat_id=OWNER_ID)) == 1, "no admin was ever told of the ticket"
