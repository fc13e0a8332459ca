"""The captcha for public groups, end to end through the webhook and the fake Bot API: the
restriction, the buttons only the member can answer, the deadline job, re-deliveries and
concurrent presses."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from django.db import connections

from community.member_state import FAILED, LEFT, PASSED, TIMEOUT, MemberStore
from community.services import members
from telegram_bot.jobs.models import Job, JobStatus
from telegram_bot.jobs.runner import new_owner, run_due
from telegram_bot.pipeline.process import Outcome, process_update
from telegram_bot.state import KVStore, override_store
from tests.community.helpers import alerts, make_jobs_due, press_update, succeeded
from tests.community.members_helpers import (
    GROUP,
    join_update,
    leave_update,
    make_policy,
    processed,
    sent_to,
    service_update,
)
from tests.conftest import make_store
from tests.fakes.telegram import FakeTelegramServer
from tests.fakes.telegram_core import Call

ANN, BOB = 3001, 3002


def challenge_of(bot: FakeTelegramServer) -> tuple[Call, dict[str, str]]:
    """The challenge message and ``{emoji: callback data}`` of its buttons."""
    [call] = [
        c for c in succeeded(bot, "sendMessage") if "mc:" in str(c.params.get("reply_markup"))
    ]
    [row] = call.params["reply_markup"]["inline_keyboard"]
    return call, {button["text"]: button["callback_data"] for button in row}


def right_and_wrong(bot: FakeTelegramServer) -> tuple[str, str]:
    call, buttons = challenge_of(bot)
    right = next(emoji for emoji in buttons if f" {emoji} within" in call.params["text"])
    wrong = next(emoji for emoji in buttons if emoji != right)
    return buttons[right], buttons[wrong]


def press(data: str, user_id: int) -> dict[str, Any]:
    return press_update(data, user_id=user_id)


def challenge_state(data: str) -> Any:
    token = data.split(":")[1]
    return members.members().get_challenge(token)


def join_challenged(bot: FakeTelegramServer, post_update: Any, **policy: Any) -> tuple[str, str]:
    make_policy(
        captcha_enabled=True, welcome_enabled=True, welcome_text="Hi {first_name}", **policy
    )
    assert processed(post_update, join_update(ANN)) == "processed"
    return right_and_wrong(bot)


def captcha_jobs(status: str = JobStatus.QUEUED) -> int:
    return Job.objects.filter(kind=members.CAPTCHA_JOB, status=status).count()


def test_a_joining_member_is_restricted_and_challenged(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    join_challenged(bot, post_update)
    [restrict] = bot.calls_to("restrictChatMember")
    assert restrict.params["chat_id"] == GROUP and restrict.params["user_id"] == ANN
    assert restrict.params["permissions"]["can_send_messages"] is False
    call, buttons = challenge_of(bot)
    assert len(buttons) == 4
    assert "tg://user?id=3001" in call.params["text"] and "120 seconds" in call.params["text"]
    assert all(len(data.encode()) <= 64 for data in buttons.values())
    assert captcha_jobs() == 1
    assert sent_to(bot) == [call.params["text"]]  # no welcome before the answer


def test_the_right_button_lifts_the_restriction_and_welcomes(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    right, _ = join_challenged(bot, post_update)
    update = press(right, ANN)
    assert processed(post_update, update) == "processed"
    lift = bot.calls_to("restrictChatMember")[-1]
    assert lift.params["user_id"] == ANN and lift.params["permissions"]["can_send_messages"]
    [delete] = bot.calls_to("deleteMessage")
    challenge_id = challenge_state(right).message_id
    assert delete.params == {"chat_id": GROUP, "message_id": challenge_id}
    assert bot.message(GROUP, challenge_id) is None
    assert sent_to(bot)[-1] == "Hi Ann"
    assert challenge_state(right).status == PASSED and challenge_state(right).finished
    assert captcha_jobs() == 0  # the deadline is cancelled
    # The same press delivered again, and a second press: nothing more happens.
    calls = len(bot.calls)
    processed(post_update, dict(update, update_id=update["update_id"] + 100_000))
    processed(post_update, press(right, ANN))
    assert [c.method for c in bot.calls[calls:]] == ["answerCallbackQuery"] * 2
    assert bot.calls_to("banChatMember") == []


def test_a_wrong_button_removes_the_member_who_may_come_back(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    _, wrong = join_challenged(bot, post_update)
    processed(post_update, press(wrong, ANN))
    [ban] = bot.calls_to("banChatMember")
    [unban] = bot.calls_to("unbanChatMember")
    assert ban.params == {"chat_id": GROUP, "user_id": ANN}
    assert unban.params == {"chat_id": GROUP, "user_id": ANN, "only_if_banned": True}
    assert len(bot.calls_to("deleteMessage")) == 1
    assert challenge_state(wrong).status == FAILED
    assert "Wrong answer." in alerts(bot)
    assert "Hi Ann" not in sent_to(bot)


def test_someone_else_pressing_changes_nothing(bot: FakeTelegramServer, post_update: Any) -> None:
    right, _ = join_challenged(bot, post_update)
    calls = len(bot.calls)
    processed(post_update, press(right, BOB))
    assert [c.method for c in bot.calls[calls:]] == ["answerCallbackQuery"]
    assert alerts(bot) == ["This is not for you."]
    assert challenge_state(right).pending


@pytest.mark.parametrize(
    "data",
    [
        "mc:AAAAAAAAAAAA:0",
        "mc:short:1",
        "mc:AAAAAAAAAAAA:9",
        "mc:",
        "mc:AAAAAAAAAAAA:x",
        "mc:AAAAAAAAAAAA:\u00b2",  # a digit to str.isdigit(), not to int()
    ],
)
def test_forged_callback_data_is_refused(
    bot: FakeTelegramServer, post_update: Any, data: str
) -> None:
    right, _ = join_challenged(bot, post_update)
    calls = len(bot.calls)
    processed(post_update, press(data, ANN))
    assert [c.method for c in bot.calls[calls:]] == ["answerCallbackQuery"]
    assert alerts(bot) == ["This button is not valid."]
    assert challenge_state(right).pending


def test_no_answer_before_the_deadline_removes_the_member(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    right, _ = join_challenged(bot, post_update)
    [job] = Job.objects.filter(kind=members.CAPTCHA_JOB)
    assert 115 <= (job.next_attempt.timestamp() - time.time()) <= 121
    assert run_due(new_owner()) == 0  # not due yet
    make_jobs_due()
    assert run_due(new_owner()) == 1
    assert len(bot.calls_to("banChatMember")) == 1 and len(bot.calls_to("unbanChatMember")) == 1
    assert len(bot.calls_to("deleteMessage")) == 1
    assert challenge_state(right).status == TIMEOUT
    # A late press finds it answered.
    processed(post_update, press(right, ANN))
    assert len(bot.calls_to("restrictChatMember")) == 1


def test_a_redelivered_join_challenges_once(bot: FakeTelegramServer, post_update: Any) -> None:
    make_policy(captcha_enabled=True)
    join = join_update(ANN)
    processed(post_update, join)
    processed(post_update, dict(join, update_id=join["update_id"] + 100_000))
    challenge_of(bot)  # exactly one challenge
    assert len(bot.calls_to("restrictChatMember")) == 1
    assert Job.objects.filter(kind=members.CAPTCHA_JOB).count() == 1


def test_a_member_who_leaves_before_answering_is_not_removed(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    right, _ = join_challenged(bot, post_update)
    leave = leave_update(ANN)
    processed(post_update, leave)
    processed(post_update, dict(leave, update_id=leave["update_id"] + 100_000))
    assert challenge_state(right).status == LEFT
    assert len(bot.calls_to("deleteMessage")) == 1
    make_jobs_due()
    run_due(new_owner())
    assert bot.calls_to("banChatMember") == [] and bot.calls_to("unbanChatMember") == []


def test_a_transient_failure_is_finished_by_the_job(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    _, wrong = join_challenged(bot, post_update)
    bot.fail_next("banChatMember", status=500, description="Internal Server Error")
    processed(post_update, press(wrong, ANN))
    assert not challenge_state(wrong).finished
    assert bot.calls_to("unbanChatMember") == []
    make_jobs_due()
    assert run_due(new_owner()) == 1
    assert [c.failed for c in bot.calls_to("banChatMember")] == [True, False]
    assert len(bot.calls_to("unbanChatMember")) == 1
    assert challenge_state(wrong).finished and challenge_state(wrong).status == FAILED


def test_a_press_whose_worker_died_is_carried_out_by_the_job_after_the_grace(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    right, _ = join_challenged(bot, post_update)
    token = right.split(":")[1]
    store = members.members()
    # The press won, then its worker died before any Telegram call.
    assert store.decide(token, PASSED, finisher=members.WEBHOOK) is not None
    make_jobs_due()
    run_due(new_owner())  # within the grace: it could still be on its way; come back later
    assert len(bot.calls_to("restrictChatMember")) == 1  # only the join's restriction
    assert captcha_jobs() == 1
    store.update_challenge(
        token, lambda c: replace(c, decided_at=c.decided_at - members.FINISH_GRACE_SECONDS)
    )
    make_jobs_due()
    assert run_due(new_owner()) == 1
    lift = bot.calls_to("restrictChatMember")[-1]
    assert lift.params["permissions"]["can_send_messages"] is True
    assert challenge_state(right).finished and sent_to(bot)[-1] == "Hi Ann"
    assert bot.calls_to("banChatMember") == []


# --- real concurrency ---------------------------------------------------------------------------


@pytest.fixture(params=["memory", "db", "redis"])
def shared(request: pytest.FixtureRequest, bot: FakeTelegramServer) -> Iterator[KVStore]:
    for store in make_store(request, request.param):

        def slow_read(key: str, read: Any = store.get) -> Any:
            # Every contender reads the pending challenge before any writes.
            value = read(key)
            if key.startswith("cap:"):
                time.sleep(0.05)
            return value

        store.get = slow_read  # type: ignore[method-assign]
        try:
            with override_store(store):
                yield store
        finally:
            # No reference cycle keeps the store alive: the claim heartbeat stops with it.
            del store.get


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(60)
def test_concurrent_presses_and_the_deadline_decide_once(
    bot: FakeTelegramServer, shared: KVStore
) -> None:
    make_policy(captcha_enabled=True)
    assert process_update(join_update(ANN)) == Outcome.PROCESSED
    right, wrong = right_and_wrong(bot)
    make_jobs_due()
    contenders = {
        "right": lambda: process_update(press(right, ANN)),
        "wrong": lambda: process_update(press(wrong, ANN)),
        "again": lambda: process_update(press(right, ANN)),
        "deadline": lambda: run_due(new_owner()),
    }
    barrier = threading.Barrier(len(contenders))
    errors: list[BaseException] = []

    def work(name: str) -> None:
        try:
            barrier.wait()
            contenders[name]()
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=work, args=(name,)) for name in contenders]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    state = challenge_state(right)
    assert state.finished
    lifts = [
        c
        for c in bot.calls_to("restrictChatMember")
        if c.params["permissions"]["can_send_messages"]
    ]
    if state.status == PASSED:
        assert len(lifts) == 1 and bot.calls_to("banChatMember") == []
    else:
        assert state.status in (FAILED, TIMEOUT)
        assert lifts == [] and len(bot.calls_to("banChatMember")) == 1
    assert len(bot.calls_to("unbanChatMember")) == (0 if state.status == PASSED else 1)
    assert len(bot.calls_to("deleteMessage")) == 1
    assert MemberStore(shared).get_stay(GROUP, ANN) is not None


# --- a worker killed while the deadline runs; a fresh one finishes it ---------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(120)
def test_a_pending_deadline_survives_a_killed_worker(bot: FakeTelegramServer) -> None:
    import multiprocessing
    import os
    import signal

    from django.utils import timezone

    from telegram_bot.state import open_store
    from tests.community.members_worker import run_due_jobs

    db_name = connections["default"].settings_dict["NAME"]
    with override_store(open_store("db://")):
        make_policy(captcha_enabled=True)
        assert process_update(join_update(ANN)) == Outcome.PROCESSED
        right, _ = right_and_wrong(bot)
        make_jobs_due()
        # The first worker hangs inside banChatMember and is killed there.
        bot.delay_next("banChatMember", 60)
        ctx = multiprocessing.get_context("spawn")
        first = ctx.Process(target=run_due_jobs, args=(db_name, bot.base_url))
        first.start()
        deadline = time.monotonic() + 60
        while not bot.calls_to("banChatMember") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert bot.calls_to("banChatMember"), "the first worker never reached Telegram"
        os.kill(first.pid or 0, signal.SIGKILL)
        first.join(timeout=30)
        assert first.exitcode == -signal.SIGKILL
        [job] = Job.objects.filter(kind=members.CAPTCHA_JOB)
        assert job.status == JobStatus.RUNNING and not challenge_state(right).finished
        # Its lease runs out (as it would after JOB_LEASE_SECONDS); a fresh process takes over.
        Job.objects.filter(pk=job.pk).update(lease_expires_at=timezone.now())
        second = ctx.Process(target=run_due_jobs, args=(db_name, bot.base_url))
        second.start()
        second.join(timeout=60)
        assert second.exitcode == 0
        state = challenge_state(right)
        assert state.status == TIMEOUT and state.finished
        job.refresh_from_db()
        assert job.status == JobStatus.SUCCEEDED
        assert len(bot.calls_to("banChatMember")) == 2  # the killed call, then the fresh one
        assert len(bot.calls_to("unbanChatMember")) == 1
        assert len(bot.calls_to("deleteMessage")) == 1


def test_a_join_answered_503_midway_is_finished_by_its_redelivery(
    bot: FakeTelegramServer, post_update: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from telegram_bot.errors import StateUnavailableError

    make_policy(captcha_enabled=True)
    real_update = MemberStore.update_challenge
    failures = [StateUnavailableError("the KV store went away")]

    def flaky(self: MemberStore, token: str, change: Any) -> Any:
        if failures:  # the first write after the restriction fails
            raise failures.pop()
        return real_update(self, token, change)

    monkeypatch.setattr(MemberStore, "update_challenge", flaky)
    join = join_update(ANN)
    assert post_update(join).status_code == 503
    assert len(bot.calls_to("restrictChatMember")) == 1 and bot.calls_to("sendMessage") == []
    # Telegram delivers the same update again, later: the released claim is gone by then (it
    # lives 1 ms; a re-delivery within it would be answered in_progress).
    time.sleep(0.01)
    assert processed(post_update, join) == "processed"
    challenge_of(bot)  # one challenge
    assert Job.objects.filter(kind=members.CAPTCHA_JOB).count() == 1
    # The restriction was not recorded before the failure: asked again (harmless).
    assert len(bot.calls_to("restrictChatMember")) == 2
    assert processed(post_update, join) == "duplicate"


# --- the two updates of one join at the same moment ---------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["memory", "db", "redis"])
def test_one_join_from_two_sources_at_once_leaves_one_challenge_message(
    request: pytest.FixtureRequest, bot: FakeTelegramServer, kind: str
) -> None:
    """The member update and the service message of one join are two updates, handled by two
    workers at once: both send the challenge (neither has recorded its message yet); the one
    not recorded is deleted, so one message with live buttons stays."""
    for store in make_store(request, kind):
        with override_store(store):
            make_policy(captcha_enabled=True, captcha_seconds=120)
            bot.delay_next("restrictChatMember", 0.3, times=2)  # both pass the first check
            bot.delay_next("sendMessage", 0.3, times=2)
            barrier = threading.Barrier(2)
            outcomes: list[Outcome] = []

            def work(
                update: dict[str, Any],
                barrier: threading.Barrier = barrier,
                outcomes: list[Outcome] = outcomes,
            ) -> None:
                try:
                    barrier.wait()
                    outcomes.append(process_update(update))
                finally:
                    connections.close_all()

            updates = [join_update(ANN), service_update(joined=[ANN])]
            threads = [threading.Thread(target=work, args=(u,)) for u in updates]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert outcomes == [Outcome.PROCESSED, Outcome.PROCESSED]
            sent = [
                c
                for c in succeeded(bot, "sendMessage")
                if c.params["chat_id"] == GROUP and "mc:" in str(c.params.get("reply_markup"))
            ]
            deleted = [c.params["message_id"] for c in succeeded(bot, "deleteMessage")]
            stay = MemberStore(store).get_stay(GROUP, ANN)
            assert stay is not None
            challenge = MemberStore(store).get_challenge(stay.cap)
            assert challenge is not None and challenge.message_id is not None
            assert len(sent) - len(deleted) == 1  # the barrier makes both send, most often
            assert challenge.message_id not in deleted
            assert bot.message(GROUP, challenge.message_id) is not None
