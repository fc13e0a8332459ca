"""Topic names and canned placeholders (no Telegram needed)."""

from __future__ import annotations

from support.models import Ticket
from support.staff import first_name, topic_name
from support.topic import render_canned


def _ticket(**fields: object) -> Ticket:
    values: dict[str, object] = {
        "number": 12,
        "user_id": 5,
        "user_name": "Alice Smith (@alice)",
        "subject": "my  order\nnever arrived",
        "status": Ticket.Status.OPEN,
        "priority": Ticket.Priority.NORMAL,
    }
    values.update(fields)
    return Ticket(**values)


def test_the_topic_name_shows_number_handle_words_and_state() -> None:
    assert topic_name(_ticket()) == "#12 · @alice · my order never arrived"
    assert topic_name(_ticket(priority="high")).startswith("🔥 #12 · @alice")
    assert topic_name(_ticket(priority="high", status="closed")).startswith("✅ #12")
    assert topic_name(_ticket(user_name="", subject="")) == "#12 · 5"
    long = topic_name(_ticket(subject="x" * 300))
    assert len(long) == 128 and long.endswith("…")


def test_canned_placeholders_are_filled_and_others_left() -> None:
    ticket = _ticket()
    assert first_name(ticket.user_name) == "Alice"
    assert render_canned("Hi {first_name}, {ticket} {unknown} {", ticket) == (
        "Hi Alice, #12 {unknown} {"
    )
    assert render_canned("Hi {first_name}", _ticket(user_name="")) == "Hi there"
