"""The support entry of /panel: open tickets newest first, paginated, with Reply and Resolve."""

from __future__ import annotations

from typing import Any

from support.models import Ticket
from tests.conftest import OWNER_ID
from tests.fakes.telegram import FakeTelegramServer
from tests.support.helpers import button, message, sent, texts


def open_tickets(post_update: Any, count: int) -> list[Ticket]:
    for n in range(count):
        post_update(message(f"/support problem {n + 1}", user_id=4000 + n))
    return list(Ticket.objects.order_by("number"))


def keyboard(call_params: dict[str, Any]) -> list[list[dict[str, str]]]:
    return call_params["reply_markup"]["inline_keyboard"]


def test_the_panel_has_a_support_entry(bot: FakeTelegramServer, post_update: Any) -> None:
    post_update(message("/panel", user_id=OWNER_ID))
    rows = keyboard(sent(bot, chat_id=OWNER_ID)[-1].params)
    assert ["Support tickets", "sup:list:1"] in [[b["text"], b["callback_data"]] for [b] in rows]


def test_open_tickets_are_listed_newest_first_and_paginated(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    tickets = open_tickets(post_update, 7)
    post_update(message("/close", user_id=4006))  # #7 closed: not listed
    post_update(button("sup:list:1", user_id=OWNER_ID))
    page = bot.calls_to("editMessageText")[-1].params
    assert page["text"] == "Open support tickets: 6, newest first (page 1 of 2)"
    rows = keyboard(page)
    labels = [row[0]["text"].split(" · ")[0] for row in rows[:5]]
    assert labels == ["#6", "#5", "#4", "#3", "#2"]
    assert rows[0][0]["callback_data"] == f"sup:view:{tickets[5].pk}:1"
    assert [b["callback_data"] for b in rows[5]] == ["sup:list:2"]
    assert rows[-1][0]["callback_data"] == "panel:home"
    post_update(button("sup:list:2", user_id=OWNER_ID))
    page = bot.calls_to("editMessageText")[-1].params
    rows = keyboard(page)
    assert [row[0]["text"].split(" · ")[0] for row in rows[:1]] == ["#1"]
    assert [b["callback_data"] for b in rows[1]] == ["sup:list:1"]
    # A page past the end shows the last page.
    post_update(button("sup:list:9", user_id=OWNER_ID))
    assert "(page 2 of 2)" in bot.calls_to("editMessageText")[-1].params["text"]


def test_a_ticket_is_shown_and_resolved_from_the_panel(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    [ticket] = open_tickets(post_update, 1)
    post_update(button(f"sup:view:{ticket.pk}:1", user_id=OWNER_ID))
    view = bot.calls_to("editMessageText")[-1].params
    assert view["text"].startswith("Ticket #1 (open) from Test (id 4000)")
    assert "User: problem 1" in view["text"]
    [actions, back] = keyboard(view)
    assert [b["callback_data"] for b in actions] == [
        f"sup:reply:{ticket.pk}",
        f"sup:resolve:{ticket.pk}:1",
    ]
    assert back[0]["callback_data"] == "sup:list:1"
    post_update(button(f"sup:resolve:{ticket.pk}:1", user_id=OWNER_ID))
    ticket.refresh_from_db()
    assert ticket.status == "closed"
    assert texts(bot, 4000)[-1].startswith("Ticket #1 was resolved by support.")
    assert bot.calls_to("editMessageText")[-1].params["text"] == "Open support tickets: none."


def test_reply_from_the_panel_answers_the_ticket(bot: FakeTelegramServer, post_update: Any) -> None:
    [ticket] = open_tickets(post_update, 1)
    post_update(button(f"sup:reply:{ticket.pk}", user_id=OWNER_ID))
    post_update(message("Answer from the panel", user_id=OWNER_ID))
    assert texts(bot, 4000)[-1] == "Support · ticket #1\n\nAnswer from the panel"
