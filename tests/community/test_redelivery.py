"""The same update delivered twice, and a decision whose worker or KV store failed half-way.

Telegram sends an update again when the webhook answered 503 (the KV store or the database
failed, even at the very end, when the update was being marked done) or did not answer at all
(the worker died). The whole handler then runs again for one update_id: receiving a join
request must be idempotent per update_id, and a decision left in "deciding" must be finished by
the ``community.decide`` watchdog job.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from community.models import ChatPolicy
from community.records import CLOSED, DECIDING, DONE, PENDING, STAGE_ADMINS
from community.services import join_decisions, join_requests
from telegram_bot import notifications as core_notifications
from telegram_bot.errors import StateUnavailableError
from telegram_bot.jobs.models import Job, JobStatus
from telegram_bot.jobs.runner import run_due
from telegram_bot.models import BotAdmin
from telegram_bot.pipeline import idempotency
from telegram_bot.pipeline.process import Outcome, process_update
from telegram_bot.state import KVStore
from tests.builders import make_join_request_update, make_message_update
from tests.community.helpers import (
    alerts,
    button_data,
    edits_to,
    make_jobs_due,
    notifications,
    press_update,
    question_policy,
    record_of,
    succeeded,
    token_of,
)
from tests.conftest import OWNER_ID
from tests.fakes.telegram import FakeTelegramServer
from tests.faults import fail_once_in

CHAT = -100555
REQUESTER = 2002
ADMIN = 11

Deliver = Callable[[dict[str, Any]], str]


@pytest.fixture(params=["webhook", "pipeline"])
def deliver(request: pytest.FixtureRequest, post_update: Any) -> Deliver:
    """Deliver an update through the webhook, or straight to ``process_update``; return the
    outcome's name ("processed", "unavailable", ...)."""

    def through_webhook(update: dict[str, Any]) -> str:
        response = post_update(update)
        if response.status_code == 200:
            return str(response["X-Update-Outcome"])
        return str(response.json()["error"])

    def through_pipeline(update: dict[str, Any]) -> str:
        return process_update(update).value

    send = through_webhook if request.param == "webhook" else through_pipeline

    def deliver_once(update: dict[str, Any]) -> str:
        outcome = send(update)
        if outcome == Outcome.UNAVAILABLE.value:
            time.sleep(0.01)  # Telegram comes back later: the released claim is gone by then
        return outcome

    return deliver_once


def fail_once(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    """Make the join-request service ``name`` (of ``join_requests`` or ``join_decisions``)
    raise StateUnavailableError the first time it is called (the KV store went away right
    then); return the list of calls made so far."""
    unreachable = StateUnavailableError("the KV store is unreachable")
    module = join_requests if hasattr(join_requests, name) else join_decisions
    return fail_once_in(monkeypatch, module, name, unreachable)


def texts_to(bot: FakeTelegramServer, chat_id: int) -> list[str]:
    return [
        c.params["text"] for c in succeeded(bot, "sendMessage") if c.params["chat_id"] == chat_id
    ]


def join_update() -> dict[str, Any]:
    return make_join_request_update(user_id=REQUESTER, chat_id=CHAT)


def only_token(store: KVStore) -> str:
    """The token of the one join-request record the test made."""
    [key] = store.scan_all("jr:r:")
    return key.rsplit(":", 1)[1]


def redeliver(deliver: Deliver, store: KVStore, update: dict[str, Any]) -> str:
    """What Telegram does after a 503 at mark_done: the update comes again, unmarked."""
    idempotency.forget(store, update["update_id"])
    return deliver(update)


def decide_jobs(status: str = JobStatus.QUEUED) -> list[Job]:
    return list(Job.objects.filter(kind=join_decisions.DECIDE_JOB, status=status))


# --- 1. a join request delivered twice is received once ---------------------------------------
def test_a_redelivered_join_request_notifies_each_admin_once(
    bot: FakeTelegramServer, deliver: Deliver, memory_store: KVStore
) -> None:
    BotAdmin.objects.create(telegram_id=ADMIN)
    update = join_update()
    assert deliver(update) == "processed"
    assert redeliver(deliver, memory_store, update) == "processed"

    assert sorted(call.params["chat_id"] for call in notifications(bot)) == [ADMIN, OWNER_ID]
    assert bot.calls_to("editMessageText") == []  # no copy "replaced by a newer request"
    [token] = {token_of(button_data(call)["Approve"]) for call in notifications(bot)}
    assert memory_store.get(f"jr:q:{CHAT}:{REQUESTER}") == token
    assert len(list(memory_store.scan_all("jr:r:"))) == 1
    record = record_of(button_data(notifications(bot)[0])["Approve"])
    assert record is not None and record.pending and len(record.copies) == 2

    # The one request decides as usual.
    press = press_update(f"jr:a:{token}", user_id=ADMIN, name="Ivan")
    assert deliver(press) == "processed"
    assert len(succeeded(bot, "approveChatJoinRequest")) == 1
    for admin_id in (OWNER_ID, ADMIN):
        [edit] = edits_to(bot, admin_id)
        assert "Approved by Ivan at " in edit.params["text"]


def test_a_redelivered_join_request_is_auto_approved_once(
    bot: FakeTelegramServer, deliver: Deliver, memory_store: KVStore
) -> None:
    ChatPolicy.objects.create(
        chat_id=CHAT,
        mode=ChatPolicy.Mode.AUTO_APPROVE,
        welcome_enabled=True,
        welcome_text="Welcome, {name}!",
    )
    update = join_update()
    assert deliver(update) == "processed"
    assert redeliver(deliver, memory_store, update) == "processed"
    assert [call.method for call in bot.calls] == ["approveChatJoinRequest", "sendMessage"]
    assert texts_to(bot, CHAT) == ["Welcome, Test!"]
    assert notifications(bot) == []


def test_a_redelivered_join_request_asks_the_question_once(
    bot: FakeTelegramServer, deliver: Deliver, memory_store: KVStore
) -> None:
    question_policy(CHAT)
    update = join_update()
    assert deliver(update) == "processed"
    assert redeliver(deliver, memory_store, update) == "processed"
    [question] = bot.calls_to("sendMessage")
    assert question.params["chat_id"] == REQUESTER
    [job] = Job.objects.filter(kind=join_requests.TIMEOUT_JOB)
    assert job.status == JobStatus.QUEUED
    assert notifications(bot) == []

    # The requester's answer still finds the one workflow, and approves once.
    answer = make_message_update("four", chat_id=REQUESTER, user_id=REQUESTER)
    assert deliver(answer) == "processed"
    assert len(succeeded(bot, "approveChatJoinRequest")) == 1
    assert texts_to(bot, REQUESTER)[-1] == "That is right: your request is approved."
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED


def test_a_delivery_that_failed_before_notifying_is_finished_by_the_redelivery(
    bot: FakeTelegramServer,
    deliver: Deliver,
    memory_store: KVStore,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    BotAdmin.objects.create(telegram_id=ADMIN)
    fail_once(monkeypatch, "hand_to_admins")
    update = join_update()
    assert deliver(update) == "unavailable"  # the claim is released: Telegram sends it again
    assert notifications(bot) == []
    assert deliver(update) == "processed"
    assert sorted(call.params["chat_id"] for call in notifications(bot)) == [ADMIN, OWNER_ID]
    [token] = {token_of(button_data(call)["Approve"]) for call in notifications(bot)}
    record = record_of(f"jr:a:{token}")
    assert record is not None and record.stage == STAGE_ADMINS and len(record.copies) == 2
    # One record: no orphan of the first delivery left pending (and listed in the panel).
    assert list(memory_store.scan_all("jr:r:")) == [f"jr:r:{token}"]


def test_a_delivery_that_failed_before_asking_is_finished_by_the_redelivery(
    bot: FakeTelegramServer,
    deliver: Deliver,
    memory_store: KVStore,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    question_policy(CHAT)
    fail_once(monkeypatch, "_ask_question")
    update = join_update()
    assert deliver(update) == "unavailable"
    assert bot.calls_to("sendMessage") == []
    assert deliver(update) == "processed"
    [question] = bot.calls_to("sendMessage")
    assert question.params["chat_id"] == REQUESTER
    assert Job.objects.filter(kind=join_requests.TIMEOUT_JOB).count() == 1
    record = record_of(f"jr:a:{only_token(memory_store)}")
    assert record is not None and record.asked and record.pending


def test_a_delivery_that_failed_while_notifying_is_finished_by_the_redelivery(
    bot: FakeTelegramServer,
    deliver: Deliver,
    memory_store: KVStore,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The stage had moved to "admins" when the database failed, before any copy was sent."""
    BotAdmin.objects.create(telegram_id=ADMIN)
    fail_once_in(monkeypatch, core_notifications, "admin_ids")
    update = join_update()
    assert deliver(update) == "unavailable"
    assert notifications(bot) == []
    assert deliver(update) == "processed"
    assert sorted(call.params["chat_id"] for call in notifications(bot)) == [ADMIN, OWNER_ID]
    record = record_of(f"jr:a:{only_token(memory_store)}")
    assert record is not None and record.stage == STAGE_ADMINS and len(record.copies) == 2
    assert record.notified
    assert redeliver(deliver, memory_store, update) == "processed"  # told once: no third copy
    assert len(notifications(bot)) == 2


def test_a_decide_job_finishes_a_hand_off_that_stopped_before_notifying(
    bot: FakeTelegramServer,
    deliver: Deliver,
    memory_store: KVStore,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A decision put back to pending by a job attempt that then failed while telling the
    admins: the job's next attempt tells them."""
    BotAdmin.objects.create(telegram_id=ADMIN)
    fail_once_in(monkeypatch, core_notifications, "admin_ids")
    assert deliver(join_update()) == "unavailable"
    token = only_token(memory_store)
    join_decisions.join_request_retry(token=token, attempt=2, last_attempt=False)
    assert sorted(call.params["chat_id"] for call in notifications(bot)) == [ADMIN, OWNER_ID]
    record = record_of(f"jr:a:{token}")
    assert record is not None and record.pending and record.notified


def test_an_answer_whose_run_failed_leaves_the_timeout_job_to_decide(
    bot: FakeTelegramServer,
    deliver: Deliver,
    memory_store: KVStore,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The answer's workflow was finished when the database failed: the re-delivered answer
    finds no workflow, so the timeout job must still be there, and decide at its deadline."""
    question_policy(CHAT, on_timeout=ChatPolicy.Fallback.DECLINE)
    assert deliver(join_update()) == "processed"
    fail_once_in(monkeypatch, join_requests, "policy_for_chat")
    answer = make_message_update("four", chat_id=REQUESTER, user_id=REQUESTER)
    assert deliver(answer) == "unavailable"
    deliver(answer)
    [job] = Job.objects.filter(kind=join_requests.TIMEOUT_JOB)
    assert job.status == JobStatus.QUEUED
    make_jobs_due()
    run_due("test-worker")
    record = record_of(f"jr:a:{only_token(memory_store)}")
    assert record is not None and record.status == DONE
    assert [c.params["user_id"] for c in bot.calls_to("declineChatJoinRequest")] == [REQUESTER]


def test_an_answer_that_decides_cancels_the_timeout_job(
    bot: FakeTelegramServer, deliver: Deliver, memory_store: KVStore
) -> None:
    question_policy(CHAT, on_timeout=ChatPolicy.Fallback.ADMINS)
    assert deliver(join_update()) == "processed"
    answer = make_message_update("four", chat_id=REQUESTER, user_id=REQUESTER)
    assert deliver(answer) == "processed"
    [job] = Job.objects.filter(kind=join_requests.TIMEOUT_JOB)
    assert job.status == JobStatus.CANCELLED
    assert [c.params["user_id"] for c in bot.calls_to("approveChatJoinRequest")] == [REQUESTER]


def test_a_timeout_job_that_failed_while_notifying_notifies_on_its_retry(
    bot: FakeTelegramServer,
    deliver: Deliver,
    memory_store: KVStore,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    BotAdmin.objects.create(telegram_id=ADMIN)
    question_policy(CHAT, on_timeout=ChatPolicy.Fallback.ADMINS)
    assert deliver(join_update()) == "processed"
    fail_once_in(monkeypatch, core_notifications, "admin_ids")
    make_jobs_due()
    run_due("test-worker")  # the attempt fails after moving the stage: the job is retried
    assert notifications(bot) == []
    make_jobs_due()
    run_due("test-worker")
    assert sorted(call.params["chat_id"] for call in notifications(bot)) == [ADMIN, OWNER_ID]


def test_a_late_redelivery_does_not_undo_a_newer_request(
    bot: FakeTelegramServer, deliver: Deliver, memory_store: KVStore
) -> None:
    older = join_update()
    assert deliver(older) == "processed"
    assert deliver(join_update()) == "processed"  # the same user asks again
    first, second = (button_data(call) for call in notifications(bot))
    assert redeliver(deliver, memory_store, older) == "processed"

    assert len(notifications(bot)) == 2
    assert memory_store.get(f"jr:q:{CHAT}:{REQUESTER}") == token_of(second["Approve"])
    closed, newest = record_of(first["Approve"]), record_of(second["Approve"])
    assert closed is not None and closed.status == CLOSED
    assert newest is not None and newest.status == PENDING


# --- 2. a decision stuck in "deciding" -----------------------------------------------------------
def stuck_approval(
    bot: FakeTelegramServer,
    deliver: Deliver,
    monkeypatch: pytest.MonkeyPatch,
    *,
    fail: str = "_settle",
    action: str = "Approve",
) -> tuple[dict[str, str], dict[str, Any]]:
    """Two admins, a welcome; Olga presses, Telegram accepts, then the KV store fails in
    ``<fail>``: 503, and Telegram delivers the press again."""
    BotAdmin.objects.create(telegram_id=ADMIN)
    ChatPolicy.objects.create(chat_id=CHAT, welcome_enabled=True, welcome_text="Hi {name}")
    assert deliver(join_update()) == "processed"
    data = button_data(notifications(bot)[0])
    fail_once(monkeypatch, fail)
    press = press_update(data[action], user_id=OWNER_ID, name="Olga")
    before = timezone.now()
    assert deliver(press) == "unavailable"
    record = record_of(data[action])
    assert record is not None and record.status == DECIDING
    [watchdog] = decide_jobs()
    assert watchdog.next_attempt >= before + timedelta(seconds=join_decisions.WATCHDOG_SECONDS)
    assert deliver(press) == "processed"  # the re-delivery: the decision is in progress
    assert alerts(bot)[-1].endswith(", in progress.")
    assert run_due("test") == 0  # the watchdog waits for the send window to pass
    return data, press


def assert_approved_once(bot: FakeTelegramServer, data: dict[str, str]) -> None:
    record = record_of(data["Approve"])
    assert record is not None and record.status == DONE
    assert record.decision is not None and record.decision.by_name == "Olga"
    assert len(succeeded(bot, "approveChatJoinRequest")) == 1
    for admin_id in (OWNER_ID, ADMIN):
        [edit] = edits_to(bot, admin_id)
        assert "Approved by Olga at " in edit.params["text"]
        assert "reply_markup" not in edit.params
    assert texts_to(bot, CHAT) == ["Hi Test"]
    assert decide_jobs() == []


def test_the_watchdog_finishes_an_approval_whose_settle_failed(
    bot: FakeTelegramServer,
    deliver: Deliver,
    memory_store: KVStore,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data, press = stuck_approval(bot, deliver, monkeypatch)
    assert len(bot.calls_to("approveChatJoinRequest")) == 1
    assert edits_to(bot, OWNER_ID) == []
    # What Telegram answers to a second approval of a request it approved.
    bot.fail_next(
        "approveChatJoinRequest", status=400, description="Bad Request: USER_ALREADY_PARTICIPANT"
    )
    assert make_jobs_due() == 1
    assert run_due("test") == 1
    assert_approved_once(bot, data)
    assert len(bot.calls_to("approveChatJoinRequest")) == 2
    assert Job.objects.get(kind=join_decisions.DECIDE_JOB).status == JobStatus.SUCCEEDED

    # A later press, or another re-delivery, says it is decided and changes nothing.
    assert deliver(press_update(data["Decline"], user_id=ADMIN)) == "processed"
    assert redeliver(deliver, memory_store, press) == "processed"
    for alert in alerts(bot)[-2:]:
        assert alert.startswith("Already decided by Olga") and alert.endswith(": approved.")
    make_jobs_due()
    assert run_due("test") == 0
    assert bot.calls_to("declineChatJoinRequest") == []
    assert len(bot.calls_to("approveChatJoinRequest")) == 2
    assert len(edits_to(bot, OWNER_ID)) == 1


def test_a_second_approval_accepted_by_telegram_also_settles_once(
    bot: FakeTelegramServer, deliver: Deliver, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, _ = stuck_approval(bot, deliver, monkeypatch)
    make_jobs_due()
    assert run_due("test") == 1
    record = record_of(data["Approve"])
    assert record is not None and record.status == DONE
    for admin_id in (OWNER_ID, ADMIN):
        assert "Approved by Olga at " in edits_to(bot, admin_id)[-1].params["text"]
    assert texts_to(bot, CHAT) == ["Hi Test"]


def test_the_watchdog_calls_telegram_when_the_worker_died_before_it_did(
    bot: FakeTelegramServer, deliver: Deliver, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, _ = stuck_approval(bot, deliver, monkeypatch, fail="_carry_out")
    assert bot.calls_to("approveChatJoinRequest") == []
    make_jobs_due()
    assert run_due("test") == 1
    assert_approved_once(bot, data)
    assert len(bot.calls_to("approveChatJoinRequest")) == 1


def test_the_watchdog_finishes_a_decline_telegram_no_longer_knows(
    bot: FakeTelegramServer, deliver: Deliver, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, _ = stuck_approval(bot, deliver, monkeypatch, action="Decline")
    bot.fail_next(
        "declineChatJoinRequest", status=400, description="Bad Request: HIDE_REQUESTER_MISSING"
    )
    make_jobs_due()
    assert run_due("test") == 1
    record = record_of(data["Decline"])
    assert record is not None and record.status == DONE
    assert len(succeeded(bot, "declineChatJoinRequest")) == 1
    for admin_id in (OWNER_ID, ADMIN):
        [edit] = edits_to(bot, admin_id)
        assert "Declined by Olga at " in edit.params["text"]
    assert texts_to(bot, CHAT) == []  # no welcome after a decline


def test_a_member_already_in_is_not_shown_as_declined(
    bot: FakeTelegramServer, deliver: Deliver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A decline cannot have made the user a member: USER_ALREADY_PARTICIPANT then means the
    request was handled elsewhere."""
    data, _ = stuck_approval(bot, deliver, monkeypatch, action="Decline")
    bot.fail_next(
        "declineChatJoinRequest", status=400, description="Bad Request: USER_ALREADY_PARTICIPANT"
    )
    make_jobs_due()
    run_due("test")
    record = record_of(data["Decline"])
    assert record is not None and record.status == CLOSED
    assert "already a member" in edits_to(bot, OWNER_ID)[-1].params["text"]


def test_an_auto_approval_whose_settle_failed_is_finished_once(
    bot: FakeTelegramServer,
    deliver: Deliver,
    memory_store: KVStore,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ChatPolicy.objects.create(
        chat_id=CHAT, mode=ChatPolicy.Mode.AUTO_APPROVE, welcome_enabled=True, welcome_text="Hi"
    )
    fail_once(monkeypatch, "_settle")
    update = join_update()
    assert deliver(update) == "unavailable"
    assert deliver(update) == "processed"  # found deciding: not approved a second time
    assert len(bot.calls_to("approveChatJoinRequest")) == 1
    bot.fail_next(
        "approveChatJoinRequest", status=400, description="Bad Request: USER_ALREADY_PARTICIPANT"
    )
    make_jobs_due()
    assert run_due("test") == 1
    assert len(succeeded(bot, "approveChatJoinRequest")) == 1
    assert texts_to(bot, CHAT) == ["Hi"]
    record = record_of(f"jr:a:{only_token(memory_store)}")
    assert record is not None and record.status == DONE


def test_a_decision_that_settles_cancels_its_watchdog(
    bot: FakeTelegramServer, deliver: Deliver
) -> None:
    assert deliver(join_update()) == "processed"
    data = button_data(notifications(bot)[0])
    assert deliver(press_update(data["Approve"], user_id=OWNER_ID)) == "processed"
    [job] = Job.objects.filter(kind=join_decisions.DECIDE_JOB)
    assert job.status == JobStatus.CANCELLED
    make_jobs_due()
    assert run_due("test") == 0
