"""The join-request question across deploys: a question asked by the previous build (its
workflow in version 1, which kept the timeout job's id) is answered under this one; one stored by
a newer build is ended, the requester told to send the request again, nothing crashes."""

from __future__ import annotations

from typing import Any

from community.records import DONE, PENDING
from community.selectors import join_request_get
from community.services import join_requests
from telegram_bot.jobs.models import Job, JobStatus
from telegram_bot.state import KVStore
from tests.builders import make_join_request_update, make_message_update
from tests.community.helpers import question_policy, succeeded
from tests.fakes.telegram import FakeTelegramServer

CHAT, REQUESTER = -100701, 2701
KEY = f"workflow:{REQUESTER}:{REQUESTER}"


def asked(post_update: Any, memory_store: KVStore) -> tuple[dict[str, Any], Job]:
    """A join request to a chat with the question; the question's workflow as stored, and the
    timeout job."""
    question_policy(CHAT)
    update = make_join_request_update(user_id=REQUESTER, chat_id=CHAT)
    assert post_update(update)["X-Update-Outcome"] == "processed"
    [timeout] = Job.objects.filter(kind=join_requests.TIMEOUT_JOB)
    return memory_store.get(KEY), timeout


def answer(post_update: Any, text: str) -> None:
    """The requester's message; ``""``: one without text (a sticker)."""
    sticker = {"sticker": {"file_id": "s", "file_unique_id": "s", "type": "regular"}}
    extra = sticker if not text else {}
    update = make_message_update(text or None, chat_id=REQUESTER, user_id=REQUESTER, **extra)
    assert post_update(update)["X-Update-Outcome"] == "processed"


def said_to_requester(bot: FakeTelegramServer) -> list[str]:
    return [
        c.params["text"] for c in succeeded(bot, "sendMessage") if c.params["chat_id"] == REQUESTER
    ]


def test_this_build_stores_the_question_in_version_2(
    bot: FakeTelegramServer, post_update: Any, memory_store: KVStore
) -> None:
    workflow, _ = asked(post_update, memory_store)
    assert workflow["v"] == 2 and set(workflow["data"]) == {"token"}


def test_a_question_asked_by_the_previous_build_is_answered(
    bot: FakeTelegramServer, post_update: Any, memory_store: KVStore
) -> None:
    workflow, timeout = asked(post_update, memory_store)
    token = workflow["data"]["token"]
    previous = {k: v for k, v in workflow.items() if k != "v"}  # version 1 had no "v"...
    previous["data"] = {"token": token, "timeout_job": timeout.pk}  # ...and kept the job's id
    memory_store.set(KEY, previous)
    answer(post_update, "")  # no text: asked again, the workflow stays, migrated
    assert said_to_requester(bot)[-1] == "Please answer with a text message."
    migrated = memory_store.get(KEY)
    assert (migrated["v"], migrated["data"]) == (2, {"token": token})
    answer(post_update, "four")
    assert [c.params["user_id"] for c in succeeded(bot, "approveChatJoinRequest")] == [REQUESTER]
    assert said_to_requester(bot)[-1] == "That is right: your request is approved."
    assert join_request_get(token).status == DONE  # type: ignore[union-attr]
    timeout.refresh_from_db()
    assert timeout.status == JobStatus.CANCELLED


def test_a_question_of_a_newer_build_asks_to_send_the_request_again(
    bot: FakeTelegramServer, post_update: Any, memory_store: KVStore
) -> None:
    workflow, timeout = asked(post_update, memory_store)
    token = workflow["data"]["token"]
    memory_store.set(KEY, {**workflow, "v": 3, "data": {"request": token, "tries": 0}})
    answer(post_update, "four")
    assert said_to_requester(bot)[-1] == (
        "Sorry, your answer cannot be taken after an update of the bot. Please send your join "
        "request again."
    )
    assert not succeeded(bot, "approveChatJoinRequest")
    assert join_request_get(token).status == PENDING  # type: ignore[union-attr]
    timeout.refresh_from_db()
    assert timeout.status == JobStatus.QUEUED  # it still decides at the deadline
    assert memory_store.get(KEY) in (None, {"finished": True})
