"""The staff group's faults: forum mode or rights lost, a topic deleted by hand, two staff
members answering at once, Telegram failing for a moment."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
from django.db import connections
from django.test import Client

from support import delivery
from support.models import Ticket
from tests.conftest import OWNER_ID, WEBHOOK_SECRET
from tests.fakes.telegram import FakeTelegramServer
from tests.support.helpers import message, sent, texts
from tests.support.staff_helpers import (
    AGENT_2,
    STAFF,
    in_topic,
    open_ticket,
    staff_bot,
    topic_calls,
    user_texts,
)

__all__ = ["staff_bot"]


def test_a_group_without_forum_mode_falls_back_to_private_chats_with_one_notice(
    staff_bot: FakeTelegramServer, post_update: Any
) -> None:
    with staff_bot.lock:
        staff_bot.results.set_forum(STAFF, False)
    ticket = open_ticket(post_update)
    ticket.refresh_from_db()
    assert ticket.topic_id is None and ticket.topic_failed_at is not None
    owner = texts(staff_bot, OWNER_ID)
    # Nothing lost: the owner got the ticket as in the private flow, and one notice.
    assert any(t.startswith("New ticket #1") for t in owner)
    notices = [t for t in owner if "could not get a topic" in t]
    assert len(notices) == 1 and "the chat is not a forum" in notices[0]
    post_update(message("a follow-up"))
    owner = texts(staff_bot, OWNER_ID)
    assert any("new message" in t and "a follow-up" in t for t in owner)
    assert len([t for t in owner if "could not get a topic" in t]) == 1
    assert len(sent(staff_bot, "createForumTopic", STAFF)) == 0  # the ticket stays private


def test_a_bot_without_the_right_to_manage_topics_falls_back(
    staff_bot: FakeTelegramServer, post_update: Any
) -> None:
    staff_bot.set_chat_member(STAFF, 123456789, "administrator", is_bot=True)
    ticket = open_ticket(post_update)
    ticket.refresh_from_db()
    assert ticket.topic_failed_at is not None
    assert any("not enough rights" in t for t in texts(staff_bot, OWNER_ID))
    assert user_texts(staff_bot)[0].startswith("Ticket #1 opened.")


def test_losing_forum_mode_later_moves_the_ticket_to_private_chats(
    staff_bot: FakeTelegramServer, post_update: Any
) -> None:
    ticket = open_ticket(post_update)
    with staff_bot.lock:
        staff_bot.results.set_forum(STAFF, False)
    post_update(message("still waiting"))
    ticket.refresh_from_db()
    assert ticket.topic_failed_at is not None
    owner = texts(staff_bot, OWNER_ID)
    assert any("still waiting" in t for t in owner)
    assert len([t for t in owner if "could not get a topic" in t]) == 1
    entry = ticket.messages.get(text="still waiting")
    assert entry.admins_notified_at is not None


def test_a_topic_deleted_by_hand_is_replaced_and_linked(
    staff_bot: FakeTelegramServer, post_update: Any
) -> None:
    ticket = open_ticket(post_update)
    old = int(Ticket.objects.get().topic_id or 0)
    with staff_bot.lock:
        staff_bot.results.delete_topic(STAFF, old)
    post_update(message("hello again"))
    ticket.refresh_from_db()
    assert ticket.topic_id not in (None, old) and ticket.topic_failed_at is None
    [copy] = topic_calls(staff_bot, "copyMessage", int(ticket.topic_id or 0))
    assert copy.params["message_id"] == ticket.messages.get(text="hello again").source_message_id
    assert not any("could not get a topic" in t for t in texts(staff_bot, OWNER_ID))


def test_a_transient_failure_sends_the_message_privately_without_falling_back(
    staff_bot: FakeTelegramServer, post_update: Any
) -> None:
    staff_bot.fail_next("createForumTopic", status=500)
    ticket = open_ticket(post_update)
    ticket.refresh_from_db()
    assert ticket.topic_failed_at is None and ticket.topic_id is None
    assert texts(staff_bot, OWNER_ID)[0].startswith("New ticket #1")
    post_update(message("next one"))
    ticket.refresh_from_db()
    assert ticket.topic_id is not None  # the next message got the topic


@pytest.mark.django_db(transaction=True)
def test_two_staff_answering_at_once_reach_the_user_once_each_in_order(
    live_bot: FakeTelegramServer, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.SUPPORT_STAFF_CHAT_ID = STAFF
    live_bot.set_chat(STAFF, "supergroup", title="Support staff", is_forum=True)
    post = _poster()
    assert post(message("/support where is my parcel")) == "processed"
    topic = int(Ticket.objects.get().topic_id or 0)
    # The first answer is slow to reach Telegram (claimed, then held up before its call); the
    # second arrives meanwhile, and would overtake it unless the desk keeps a ticket's
    # answers in order.
    real_send = delivery._send_user_message
    held = threading.Event()

    def slow_first(*args: Any) -> int:
        if not held.is_set():
            held.set()
            time.sleep(0.5)
        return real_send(*args)

    monkeypatch.setattr(delivery, "_send_user_message", slow_first)
    first = in_topic("first answer", topic)
    second = in_topic("second answer", topic, user_id=AGENT_2)
    outcomes: list[str] = []
    slow = threading.Thread(target=lambda: outcomes.append(post(first, close=True)))
    slow.start()
    _wait_for(held.is_set)
    outcomes.append(post(second))
    slow.join(timeout=30)
    assert outcomes == ["processed", "processed"]
    got = [t for t in user_texts(live_bot) if t.startswith("Support")]
    assert got == ["Support · ticket #1\n\nfirst answer", "Support · ticket #1\n\nsecond answer"]
    # Re-delivered, neither is sent again.
    for answer in (first, second):
        assert post(answer) in ("duplicate", "processed")
    assert [t for t in user_texts(live_bot) if t.startswith("Support")] == got


def _wait_for(condition: Any, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.01)


def _poster() -> Any:
    def post(update: dict[str, Any], *, close: bool = False) -> str:
        """``close``: posted from a thread of the test, whose connection must not outlive it
        (the test database could not be dropped)."""
        try:
            response = Client().post(
                "/telegram/webhook",
                data=json.dumps(update),
                content_type="application/json",
                HTTP_X_TELEGRAM_BOT_API_SECRET_TOKEN=WEBHOOK_SECRET,
            )
            return str(response["X-Update-Outcome"])
        finally:
            if close:
                connections.close_all()

    return post


def test_erasing_the_user_deletes_their_topics(
    staff_bot: FakeTelegramServer, post_update: Any, django_capture_on_commit_callbacks: Any
) -> None:
    from support import privacy
    from telegram_bot.privacy import Subject

    ticket = open_ticket(post_update)
    topic = int(Ticket.objects.get().topic_id or 0)
    with django_capture_on_commit_callbacks(execute=True):
        subject = Subject(user_id=ticket.user_id, anonymous_id=2**52 + 5, marker_prefix="t:")
        privacy.erase(subject, None)  # type: ignore[arg-type]
    ticket.refresh_from_db()
    assert ticket.topic_id is None
    [deleted] = sent(staff_bot, "deleteForumTopic")
    assert deleted.params == {"chat_id": STAFF, "message_thread_id": topic}
    with staff_bot.lock:
        assert topic not in staff_bot.results.topics[STAFF]


def test_an_answer_the_user_cannot_get_is_reported_in_the_topic(
    staff_bot: FakeTelegramServer, post_update: Any
) -> None:
    from tests.support.helpers import USER

    ticket = open_ticket(post_update)
    topic = int(Ticket.objects.get().topic_id or 0)
    staff_bot.block_chat(USER)
    post_update(in_topic("Here is your refund.", topic))
    lines = [c.params["text"] for c in topic_calls(staff_bot, "sendMessage", topic)]
    assert any(line.startswith("Not delivered to the user of ticket #1") for line in lines)
    assert ticket.messages.get(text="Here is your refund.").delivery_state == "not delivered"


def test_an_answer_to_a_closed_ticket_is_refused_in_the_topic(
    staff_bot: FakeTelegramServer, post_update: Any
) -> None:
    ticket = open_ticket(post_update)
    topic = int(Ticket.objects.get().topic_id or 0)
    post_update(message("/close"))
    post_update(in_topic("one more thing", topic))
    lines = [c.params["text"] for c in topic_calls(staff_bot, "sendMessage", topic)]
    assert "Ticket #1 is closed: /reopen it to answer." in lines
    assert not ticket.messages.filter(text="one more thing").exists()


def test_a_redelivered_user_message_is_copied_once(
    staff_bot: FakeTelegramServer, post_update: Any
) -> None:
    ticket = open_ticket(post_update)
    follow_up = message("did you see this?")
    post_update(follow_up)
    post_update(follow_up)
    copies = topic_calls(staff_bot, "copyMessage", int(ticket.topic_id or 0))
    assert len(copies) == 1  # the follow-up, once (the opening "/support <text>" is a line)


@pytest.mark.django_db(transaction=True)
def test_two_messages_racing_for_a_new_topic_end_in_one(
    live_bot: FakeTelegramServer, settings: Any
) -> None:
    from support import services
    from support.services import Author, Origin
    from support.validation import Content
    from tests.builders import next_update_id
    from tests.support.helpers import USER

    entry, _ = services.ticket_open(  # opened before the staff group was set: no topic
        bot_id=123456789,
        user_id=USER,
        chat_id=USER,
        author=Author(name="Test", telegram_id=USER),
        origin=Origin(update_id=next_update_id(), chat_id=USER, message_id=1),
        content=Content(kind="text", text="help"),
    )
    settings.SUPPORT_STAFF_CHAT_ID = STAFF
    live_bot.set_chat(STAFF, "supergroup", title="Support staff", is_forum=True)
    live_bot.delay_next("createForumTopic", 0.3, times=2)
    post = _poster()
    outcomes: list[str] = []
    threads = [
        threading.Thread(target=lambda text=text: outcomes.append(post(message(text), close=True)))
        for text in ("first", "second")
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert outcomes == ["processed", "processed"]
    ticket = Ticket.objects.get(pk=entry.ticket_id)
    with live_bot.lock:
        assert list(live_bot.results.topics[STAFF]) == [ticket.topic_id]
    copies = topic_calls(live_bot, "copyMessage", int(ticket.topic_id or 0))
    assert len(copies) == 2
    created = len(sent(live_bot, "createForumTopic"))
    assert created - len(sent(live_bot, "deleteForumTopic")) == 1


def test_a_broken_group_tells_the_owner_once_not_per_ticket(
    staff_bot: FakeTelegramServer, post_update: Any
) -> None:
    with staff_bot.lock:
        staff_bot.results.set_forum(STAFF, False)
    open_ticket(post_update, "/support one")
    open_ticket(post_update, "/support two")
    assert Ticket.objects.filter(topic_failed_at__isnull=False).count() == 2
    notices = [t for t in texts(staff_bot, OWNER_ID) if "could not get a topic" in t]
    assert len(notices) == 1 and notices[0].startswith("Ticket #1")
    assert len([t for t in texts(staff_bot, OWNER_ID) if t.startswith("New ticket")]) == 2
