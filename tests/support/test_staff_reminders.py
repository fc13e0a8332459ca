"""A ticket waiting too long reminds its assignee (or the group) once per wait."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from django.db import connections
from django.utils import timezone

from support import tasks
from support.models import Ticket
from tests.conftest import OWNER_ID
from tests.fakes.telegram import FakeTelegramServer
from tests.support.helpers import message, texts
from tests.support.staff_helpers import in_topic, open_ticket, staff_bot, topic_calls

__all__ = ["staff_bot"]


def _age(ticket: Ticket, minutes: int) -> None:
    Ticket.objects.filter(pk=ticket.pk).update(
        waiting_since=timezone.now() - timedelta(minutes=minutes)
    )


def _reminders(bot: FakeTelegramServer, topic: int) -> list[str]:
    return [
        c.params["text"] for c in topic_calls(bot, "sendMessage", topic) if "⏰" in c.params["text"]
    ]


def test_a_waiting_ticket_reminds_its_assignee_in_the_topic_once(
    staff_bot: FakeTelegramServer, post_update: Any, settings: Any
) -> None:
    settings.SUPPORT_REMIND_AFTER_MINUTES = 30
    ticket = open_ticket(post_update)
    topic = int(Ticket.objects.get().topic_id or 0)
    post_update(in_topic("/assign @maria_support", topic))
    _age(ticket, 20)
    assert tasks.remind_waiting_tick() == 0  # not yet
    _age(ticket, 31)
    assert tasks.remind_waiting_tick() == 1
    assert tasks.remind_waiting_tick() == 0  # once
    [reminder] = _reminders(staff_bot, topic)
    assert reminder.startswith("@maria_support: ⏰ Ticket #1 has waited")
    # Answered, then the user writes again: a new wait, which may remind again.
    post_update(in_topic("Looking into it.", topic))
    assert Ticket.objects.get().waiting_since is None
    assert tasks.remind_waiting_tick() == 0
    post_update(message("and?"))
    _age(ticket, 31)
    assert tasks.remind_waiting_tick() == 1
    assert len(_reminders(staff_bot, topic)) == 2


def test_closed_tickets_are_not_reminded(staff_bot: FakeTelegramServer, post_update: Any) -> None:
    ticket = open_ticket(post_update)
    post_update(message("/close"))
    _age(ticket, 600)
    assert tasks.remind_waiting_tick() == 0


def test_without_a_staff_group_the_admins_are_reminded(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    ticket = open_ticket(post_update)
    _age(ticket, 61)
    assert tasks.remind_waiting_tick() == 1
    assert "⏰ Ticket #1 has waited for an answer for over 60 minutes." in texts(bot, OWNER_ID)


@pytest.mark.django_db(transaction=True)
def test_two_workers_remind_once(live_bot: FakeTelegramServer, settings: Any) -> None:
    from tests.support.staff_helpers import STAFF

    settings.SUPPORT_STAFF_CHAT_ID = STAFF
    live_bot.set_chat(STAFF, "supergroup", title="Support staff", is_forum=True)
    from support import services
    from support.services import Author, Origin
    from support.validation import Content
    from tests.builders import next_update_id

    entry, _ = services.ticket_open(
        bot_id=123456789,
        user_id=2001,
        chat_id=2001,
        author=Author(name="Alice", telegram_id=2001),
        origin=Origin(update_id=next_update_id(), chat_id=2001, message_id=1),
        content=Content(kind="text", text="help"),
    )
    _age(entry.ticket, 61)
    counts: list[int] = []
    barrier = threading.Barrier(2)

    def tick() -> None:
        barrier.wait()
        try:
            counts.append(tasks.remind_waiting_tick())
        finally:
            connections.close_all()

    workers = [threading.Thread(target=tick) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=30)
    assert sorted(counts) == [0, 1]
    assert len([t for t in texts(live_bot, OWNER_ID) if "⏰" in t]) == 1


def test_a_telegram_assignee_is_mentioned_so_that_they_are_notified(
    staff_bot: FakeTelegramServer, post_update: Any
) -> None:
    from tests.support.staff_helpers import AGENT

    ticket = open_ticket(post_update)
    topic = int(Ticket.objects.get().topic_id or 0)
    post_update(in_topic("/assign me", topic))
    _age(ticket, 61)
    assert tasks.remind_waiting_tick() == 1
    [call] = [c for c in topic_calls(staff_bot, "sendMessage", topic) if "⏰" in c.params["text"]]
    [mention] = call.params["entities"]
    assert (mention["type"], mention["user"]["id"], mention["offset"]) == ("text_mention", AGENT, 0)
    name = call.params["text"][: mention["length"]]
    assert call.params["text"].startswith(f"{name}: ⏰ Ticket #1")
