"""One question at a time per requester: questions of two chats, a support conversation in
the private chat, a question that waited too long, two requests at once, a re-delivery while
the waiting question is asked. Each test failed on the code before its fix."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from community.selectors import join_request_get
from community.services import join_requests
from support import services as support_services
from telegram_bot.jobs.models import Job, JobStatus
from telegram_bot.jobs.runner import new_owner, run_due
from telegram_bot.pipeline import idempotency
from telegram_bot.state import get_store
from telegram_bot.state.workflows import WorkflowStore
from tests.builders import make_join_request_update, make_message_update
from tests.community.helpers import make_jobs_due, question_policy, succeeded
from tests.fakes.telegram import FakeTelegramServer

CHAT_A, CHAT_B, REQUESTER = -100601, -100602, 2002


def support_request(ttl_ms: int = 60_000) -> WorkflowStore:
    """The requester is in a support conversation with the bot (``/support``, then waiting for
    the request) in their private chat; the store that ends it."""
    workflows = WorkflowStore(get_store(), support_services.OPEN)
    workflows.start(
        chat_id=REQUESTER,
        user_id=REQUESTER,
        name=support_services.OPEN.name,
        step="message",
        ttl_ms=ttl_ms,
    )
    return workflows


def test_questions_of_two_chats_asked_at_once_each_take_their_own_answer(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    """The question's workflow is keyed on the requester's private chat only, so the request to
    a second chat replaced the first one's workflow: the answer to the first question was taken
    as the (wrong) answer to the second, the second answer found no workflow, and the first
    request was declined at its deadline although it was answered right. Now the second
    question waits until the chat is free."""
    for chat_id, question, answer in ((CHAT_A, "Two plus two?", "four"), (CHAT_B, "Cat?", "meow")):
        question_policy(chat_id, question=question, answers=answer)
        update = make_join_request_update(user_id=REQUESTER, chat_id=chat_id)
        assert post_update(update)["X-Update-Outcome"] == "processed"
    [first] = asked_of(bot)
    assert "Two plus two?" in first
    post_update(make_message_update("four", chat_id=REQUESTER, user_id=REQUESTER))
    make_jobs_due()
    run_due(new_owner())  # the waiting question's job: the chat is free now
    assert len(asked_of(bot)) == 2 and "Cat?" in asked_of(bot)[1]
    post_update(make_message_update("meow", chat_id=REQUESTER, user_id=REQUESTER))
    approved = sorted(c.params["chat_id"] for c in succeeded(bot, "approveChatJoinRequest"))
    assert approved == sorted([CHAT_A, CHAT_B]), f"approved only {approved}"


def test_a_question_waits_for_a_support_conversation_and_does_not_wipe_it(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    workflows = support_request()
    question_policy(CHAT_A)
    update = make_join_request_update(user_id=REQUESTER, chat_id=CHAT_A)
    assert post_update(update)["X-Update-Outcome"] == "processed"
    assert asked_of(bot) == []
    kept = workflows.get(chat_id=REQUESTER, user_id=REQUESTER)
    assert kept is not None and kept.name == support_services.OPEN.name
    workflows.cancel(chat_id=REQUESTER, user_id=REQUESTER)  # the conversation ends
    make_jobs_due()
    run_due(new_owner())
    assert len(asked_of(bot)) == 1


def asked_of(bot: FakeTelegramServer) -> list[str]:
    """The questions sent to the requester (not the answers to their answers)."""
    return [
        c.params["text"]
        for c in succeeded(bot, "sendMessage")
        if c.params["chat_id"] == REQUESTER and "Please answer" in c.params["text"]
    ]


def test_a_question_that_waited_past_telegrams_window_goes_to_the_admins(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    support_request(ttl_ms=3_600_000)
    question_policy(CHAT_A)
    update = make_join_request_update(user_id=REQUESTER, chat_id=CHAT_A)
    update["chat_join_request"]["date"] = int(time.time()) - join_requests.ASK_WINDOW_SECONDS - 5
    assert post_update(update)["X-Update-Outcome"] == "processed"
    make_jobs_due()
    run_due(new_owner())
    assert asked_of(bot) == []
    notes = [c.params["text"] for c in succeeded(bot, "sendMessage") if "jr:a:" in str(c.params)]
    assert len(notes) == 1 and "could not be asked in time" in notes[0]


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(60)
def test_two_join_requests_at_the_same_moment_ask_one_question_and_defer_the_other(
    bot: FakeTelegramServer,
) -> None:
    """Real threads, both requests past the busy check at once: the workflow's
    compare-and-set lets one start; the other's question waits (before, the second start
    replaced the first one's workflow)."""
    from django.db import connections

    from telegram_bot.pipeline.process import Outcome, process_update

    for chat_id in (CHAT_A, CHAT_B):
        question_policy(chat_id, question=f"Question of {chat_id}?")
    updates = [make_join_request_update(user_id=REQUESTER, chat_id=c) for c in (CHAT_A, CHAT_B)]
    barrier = threading.Barrier(2)
    outcomes: list[Any] = []

    def work(update: dict[str, Any]) -> None:
        try:
            barrier.wait()
            outcomes.append(process_update(update))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=work, args=(update,)) for update in updates]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert outcomes == [Outcome.PROCESSED, Outcome.PROCESSED]
    [asked] = asked_of(bot)
    workflow = WorkflowStore(get_store(), join_requests.QUESTION).get(
        chat_id=REQUESTER, user_id=REQUESTER
    )
    assert workflow is not None and str(workflow.data["token"])
    waiting = Job.objects.filter(kind="community.question_ask", status=JobStatus.QUEUED)
    assert waiting.count() == 1
    # The workflow belongs to the request whose question went out.
    record = join_request_get(str(workflow.data["token"]))
    assert record is not None and f"Question of {record.chat_id}?" in asked


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(60)
def test_a_redelivery_while_the_waiting_questions_job_asks_sends_one_question(
    bot: FakeTelegramServer,
) -> None:
    """The question waited for a busy chat (its job queued); the chat is free now, and the
    job and a re-delivery of the request (its first delivery stopped before answering) ask at
    the same moment, real threads, one of them slowed inside sendMessage: one asks, the other
    leaves it to the job (before, both found the workflow their own and both sent)."""
    from django.db import connections

    from telegram_bot.pipeline.process import process_update

    workflows = support_request()
    question_policy(CHAT_A)
    update = make_join_request_update(user_id=REQUESTER, chat_id=CHAT_A)
    process_update(update)
    assert asked_of(bot) == []
    workflows.cancel(chat_id=REQUESTER, user_id=REQUESTER)  # the chat is free
    idempotency.forget(get_store(), update["update_id"])  # as if the first delivery had stopped
    make_jobs_due()
    bot.delay_next("sendMessage", 1.0)
    barrier = threading.Barrier(2)

    def redeliver() -> None:
        try:
            barrier.wait()
            process_update(update)
        finally:
            connections.close_all()

    def job() -> None:
        try:
            barrier.wait()
            run_due(new_owner())
        finally:
            connections.close_all()

    threads = [threading.Thread(target=redeliver), threading.Thread(target=job)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    make_jobs_due()
    run_due(new_owner())  # a question left to the job finds it asked
    assert len(asked_of(bot)) == 1, asked_of(bot)
