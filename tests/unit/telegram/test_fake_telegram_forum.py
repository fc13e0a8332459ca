"""The fake Bot API's forum topics follow the spec and Telegram's rules
(tests/fakes/telegram_forum.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from tests.fakes.telegram import FAKE_TOKEN, FakeTelegram, FakeTelegramTransport

FORUM = -1001111111111
BOT_ID = int(FAKE_TOKEN.split(":")[0])


@pytest.fixture
def fake() -> FakeTelegram:
    fake = FakeTelegram(long_poll_cap=1.0)
    fake.set_chat(FORUM, "supergroup", title="Staff", is_forum=True)
    return fake


@pytest.fixture
def bot(fake: FakeTelegram) -> Iterator[Callable[..., Any]]:
    transport = FakeTelegramTransport(fake)
    with httpx.Client(transport=transport, base_url="https://api.telegram.org") as http:

        def call(method: str, **params: Any) -> Any:
            return http.post(f"/bot{FAKE_TOKEN}/{method}", json=params).json()

        yield call


def test_a_topic_is_created_closed_reopened_renamed_and_written_to(
    fake: FakeTelegram, bot: Callable[..., Any]
) -> None:
    created = bot("createForumTopic", chat_id=FORUM, name="#1 · @alice · help")
    assert created["ok"] is True
    topic = created["result"]["message_thread_id"]
    assert set(created["result"]) == {"message_thread_id", "name", "icon_color"}
    sent = bot("sendMessage", chat_id=FORUM, message_thread_id=topic, text="hi")
    assert sent["result"]["message_thread_id"] == topic
    assert bot("closeForumTopic", chat_id=FORUM, message_thread_id=topic)["result"] is True
    again = bot("closeForumTopic", chat_id=FORUM, message_thread_id=topic)
    assert again["description"] == "Bad Request: TOPIC_NOT_MODIFIED"
    assert bot("reopenForumTopic", chat_id=FORUM, message_thread_id=topic)["ok"] is True
    assert bot("editForumTopic", chat_id=FORUM, message_thread_id=topic, name="✅ #1")["ok"]
    same = bot("editForumTopic", chat_id=FORUM, message_thread_id=topic, name="✅ #1")
    assert same["description"] == "Bad Request: TOPIC_NOT_MODIFIED"
    with fake.lock:
        assert fake.results.topics[FORUM][topic] == {
            "name": "✅ #1",
            "icon_color": 0x6FB9F0,
            "closed": False,
        }


def test_parameters_outside_the_spec_and_bad_names_are_refused(bot: Callable[..., Any]) -> None:
    assert bot("createForumTopic", chat_id=FORUM, name="x", colour=1)["ok"] is False
    assert bot("createForumTopic", chat_id=FORUM)["ok"] is False
    too_long = bot("createForumTopic", chat_id=FORUM, name="x" * 129)
    assert too_long["description"] == "Bad Request: TOPIC_NAME_INVALID"


def test_no_forum_no_rights_and_deleted_topics_fail_like_telegram(
    fake: FakeTelegram, bot: Callable[..., Any]
) -> None:
    topic = bot("createForumTopic", chat_id=FORUM, name="t")["result"]["message_thread_id"]
    with fake.lock:
        fake.results.delete_topic(FORUM, topic)
    gone = bot("copyMessage", chat_id=FORUM, message_thread_id=topic, from_chat_id=5, message_id=1)
    assert gone["description"] == "Bad Request: message thread not found"
    plain = bot("createForumTopic", chat_id=-1002222222222, name="t")
    assert plain["description"] == "Bad Request: the chat is not a forum"
    fake.set_chat_member(FORUM, BOT_ID, "administrator", is_bot=True, can_manage_topics=False)
    refused = bot("createForumTopic", chat_id=FORUM, name="t")
    assert refused["description"] == "Bad Request: not enough rights to create a topic"
    with fake.lock:
        fake.results.set_forum(FORUM, False)
    assert bot("sendMessage", chat_id=FORUM, text="General still works")["ok"] is True
