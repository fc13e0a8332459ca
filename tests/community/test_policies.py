"""Per-chat policies: auto-approve, the question (right answer, wrong answer, timeout), and
the welcome after an approval."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from community.models import ChatPolicy
from community.records import DONE, PENDING, STAGE_ADMINS
from telegram_bot.jobs.models import Job, JobStatus
from telegram_bot.jobs.runner import run_due
from telegram_bot.state import KVStore
from telegram_bot.state.workflows import WorkflowStore
from tests.builders import make_join_request_update, make_message_update
from tests.community.helpers import (
    button_data,
    make_jobs_due,
    notifications,
    press_update,
    record_of,
    succeeded,
)
from tests.community.helpers import question_policy as a_question_policy
from tests.conftest import OWNER_ID
from tests.fakes.telegram import FakeTelegramServer

CHAT = -100555
REQUESTER = 2002


def policy(**fields: Any) -> ChatPolicy:
    return ChatPolicy.objects.create(chat_id=CHAT, **fields)


def question_policy(**fields: Any) -> ChatPolicy:
    return a_question_policy(CHAT, **{"answers": "four\n4", **fields})


def request_join(post_update: Any, chat_type: str = "supergroup") -> None:
    update = make_join_request_update(user_id=REQUESTER, chat_id=CHAT)
    update["chat_join_request"]["chat"]["type"] = chat_type
    assert post_update(update)["X-Update-Outcome"] == "processed"


def answer(post_update: Any, text: str) -> Any:
    return post_update(make_message_update(text, chat_id=REQUESTER, user_id=REQUESTER))


def texts_to(bot: FakeTelegramServer, chat_id: int) -> list[str]:
    return [
        c.params["text"] for c in succeeded(bot, "sendMessage") if c.params["chat_id"] == chat_id
    ]


def pass_the_deadline(store: KVStore) -> None:
    """What the clock does at the deadline: the workflow expires and the timeout job is due."""
    key = f"workflow:{REQUESTER}:{REQUESTER}"
    workflow = store.get(key)
    store.set(key, {**workflow, "expires_at_ms": 1})
    make_jobs_due()


# --- auto-approve and the welcome ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("chat_type", "welcome_chat"), [("supergroup", CHAT), ("channel", REQUESTER)]
)
def test_it_auto_approves_and_welcomes_in_the_group_or_privately_for_a_channel(
    bot: FakeTelegramServer, post_update: Any, chat_type: str, welcome_chat: int
) -> None:
    policy(
        mode=ChatPolicy.Mode.AUTO_APPROVE,
        welcome_enabled=True,
        welcome_text="Welcome, {name}! <b>not markup</b>",
    )
    request_join(post_update, chat_type)
    assert [call.method for call in bot.calls] == ["approveChatJoinRequest", "sendMessage"]
    [welcome] = bot.calls_to("sendMessage")
    assert welcome.params["chat_id"] == welcome_chat
    assert welcome.params["text"] == "Welcome, Test! <b>not markup</b>"
    assert "parse_mode" not in welcome.params
    assert notifications(bot) == []


def test_it_sends_no_welcome_when_it_is_off(bot: FakeTelegramServer, post_update: Any) -> None:
    policy(mode=ChatPolicy.Mode.AUTO_APPROVE, welcome_enabled=False, welcome_text="Hi {name}")
    request_join(post_update)
    assert [call.method for call in bot.calls] == ["approveChatJoinRequest"]


def test_an_admin_approval_sends_the_welcome(bot: FakeTelegramServer, post_update: Any) -> None:
    policy(welcome_enabled=True, welcome_text="Hello {name}")
    request_join(post_update)
    post_update(press_update(button_data(notifications(bot)[0])["Approve"], user_id=OWNER_ID))
    assert texts_to(bot, CHAT) == ["Hello Test"]


def test_an_auto_approval_that_telegram_refuses_goes_to_the_admins(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    policy(mode=ChatPolicy.Mode.AUTO_APPROVE)
    bot.fail_next(
        "approveChatJoinRequest", status=400, description="Bad Request: CHAT_ADMIN_REQUIRED"
    )
    request_join(post_update)
    [note] = notifications(bot)
    assert "Approve by the auto-approve policy failed" in note.params["text"]
    post_update(press_update(button_data(note)["Approve"], user_id=OWNER_ID))
    assert len(succeeded(bot, "approveChatJoinRequest")) == 1


# --- the question -------------------------------------------------------------------------------
def test_the_right_answer_approves_and_welcomes(bot: FakeTelegramServer, post_update: Any) -> None:
    question_policy(welcome_enabled=True, welcome_text="Welcome, {name}!")
    before = timezone.now()
    request_join(post_update)
    [asked] = bot.calls_to("sendMessage")
    assert asked.params["chat_id"] == REQUESTER  # user_chat_id
    assert "What is two plus two?" in asked.params["text"] and "2 minutes" in asked.params["text"]
    assert notifications(bot) == []
    job = Job.objects.get(kind="community.question_timeout")
    deadline = before + timedelta(seconds=120)
    assert abs((job.next_attempt - deadline).total_seconds()) < 5

    assert answer(post_update, "  FOUR. ")["X-Update-Outcome"] == "processed"
    [approve] = bot.calls_to("approveChatJoinRequest")
    assert approve.params == {"chat_id": CHAT, "user_id": REQUESTER}
    assert texts_to(bot, CHAT) == ["Welcome, Test!"]
    assert texts_to(bot, REQUESTER)[-1] == "That is right: your request is approved."
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED
    assert [call.method for call in bot.calls] == [
        "sendMessage",
        "approveChatJoinRequest",
        "sendMessage",
        "sendMessage",
    ]


def test_a_wrong_answer_leaves_the_request_to_the_admins_by_default(
    bot: FakeTelegramServer, post_update: Any, memory_store: KVStore
) -> None:
    question_policy()
    request_join(post_update)
    answer(post_update, "five")
    assert bot.calls_to("approveChatJoinRequest") == []
    assert bot.calls_to("declineChatJoinRequest") == []
    assert texts_to(bot, REQUESTER)[-1] == "Thank you. An admin will look at your request."
    [note] = notifications(bot)
    assert note.params["chat_id"] == OWNER_ID
    assert "Answer not accepted: five" in note.params["text"]
    assert Job.objects.get(kind="community.question_timeout").status == JobStatus.CANCELLED
    # Another message is no longer an answer.
    assert WorkflowStore(memory_store).get(chat_id=REQUESTER, user_id=REQUESTER) is None
    answer(post_update, "four")
    assert bot.calls_to("approveChatJoinRequest") == []
    post_update(press_update(button_data(note)["Approve"], user_id=OWNER_ID))
    assert len(succeeded(bot, "approveChatJoinRequest")) == 1


def test_a_wrong_answer_declines_when_the_policy_says_so(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    question_policy(on_wrong_answer=ChatPolicy.Fallback.DECLINE)
    request_join(post_update)
    answer(post_update, "five")
    [decline] = bot.calls_to("declineChatJoinRequest")
    assert decline.params == {"chat_id": CHAT, "user_id": REQUESTER}
    assert bot.calls_to("approveChatJoinRequest") == []
    assert notifications(bot) == []
    assert texts_to(bot, REQUESTER)[-1] == (
        "Sorry, that is not the right answer. Your request was declined."
    )


def test_no_answer_by_the_deadline_declines(
    bot: FakeTelegramServer, post_update: Any, memory_store: KVStore
) -> None:
    question_policy(on_timeout=ChatPolicy.Fallback.DECLINE)
    request_join(post_update)
    assert run_due("test-worker") == 0  # the job waits for the deadline
    pass_the_deadline(memory_store)
    assert run_due("test-worker") == 1
    [decline] = bot.calls_to("declineChatJoinRequest")
    assert decline.params == {"chat_id": CHAT, "user_id": REQUESTER}
    assert notifications(bot) == []
    answer(post_update, "four")  # too late
    assert texts_to(bot, REQUESTER)[-1] == "Sorry, the time to answer is over."
    assert bot.calls_to("approveChatJoinRequest") == []


def test_no_answer_by_the_deadline_goes_to_the_admins_when_the_policy_says_so(
    bot: FakeTelegramServer, post_update: Any, memory_store: KVStore
) -> None:
    question_policy(on_timeout=ChatPolicy.Fallback.ADMINS)
    request_join(post_update)
    pass_the_deadline(memory_store)
    run_due("test-worker")
    assert bot.calls_to("declineChatJoinRequest") == []
    [note] = notifications(bot)
    assert "No answer to the question in time." in note.params["text"]
    record = record_of(button_data(note)["Approve"])
    assert record is not None and record.status == PENDING and record.stage == STAGE_ADMINS
    post_update(press_update(button_data(note)["Decline"], user_id=OWNER_ID))
    assert len(succeeded(bot, "declineChatJoinRequest")) == 1


def test_an_admin_can_decide_while_the_requester_is_still_asked(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    from tests.builders import make_callback_update

    question_policy()
    request_join(post_update)
    post_update(make_callback_update("jr:list", user_id=OWNER_ID, message_id=900))
    page = bot.calls_to("editMessageText")[-1]
    assert "(waiting for the answer)" in page.params["text"]
    post_update(press_update(button_data(page)["Approve 1"], user_id=OWNER_ID))
    assert len(succeeded(bot, "approveChatJoinRequest")) == 1
    answer(post_update, "four")  # the answer comes after the decision: nothing more happens
    assert len(bot.calls_to("approveChatJoinRequest")) == 1
    assert texts_to(bot, REQUESTER)[-1] == "Thank you. Your request is already being handled."
    make_jobs_due()
    run_due("test-worker")
    assert bot.calls_to("declineChatJoinRequest") == []
    record = record_of(button_data(page)["Approve 1"])
    assert record is not None and record.status == DONE


def test_a_question_that_cannot_be_delivered_goes_to_the_admins(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    question_policy()
    bot.block_chat(REQUESTER)
    request_join(post_update)
    [note] = notifications(bot)
    assert "The question could not be sent to the requester" in note.params["text"]
    assert Job.objects.get(kind="community.question_timeout").status == JobStatus.CANCELLED


def test_a_question_decided_by_an_admin_frees_the_chat_for_the_next_chats_question(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    """Before, the decided request's workflow kept the requester's chat busy until its
    timeout (up to 300 s): the other chat's question waited, and could end with the admins
    for want of time. Now it is asked at once, and its answer is its own."""
    from tests.builders import make_callback_update

    other_chat = -100556
    question_policy()
    a_question_policy(other_chat, question="Cat?", answers="meow")
    request_join(post_update)
    post_update(make_callback_update("jr:list", user_id=OWNER_ID, message_id=900))
    page = bot.calls_to("editMessageText")[-1]
    post_update(press_update(button_data(page)["Approve 1"], user_id=OWNER_ID))
    assert len(succeeded(bot, "approveChatJoinRequest")) == 1
    update = make_join_request_update(user_id=REQUESTER, chat_id=other_chat)
    assert post_update(update)["X-Update-Outcome"] == "processed"
    assert "Cat?" in texts_to(bot, REQUESTER)[-1]  # asked now, not by a job later
    answer(post_update, "meow")
    approved = [c.params["chat_id"] for c in succeeded(bot, "approveChatJoinRequest")]
    assert approved == [CHAT, other_chat]
