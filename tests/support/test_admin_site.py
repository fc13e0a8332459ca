"""Tickets in the admin site: list, filters, search, timings, detail, reply, resolve, reopen."""

from __future__ import annotations

import re
import uuid
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from support import services
from support.assignees import assignee_names
from support.models import Ticket, TicketMessage
from support.services import Author, Origin
from support.validation import Content
from telegram_bot.models import BotAdmin, DeliveryFailure
from tests.builders import next_update_id
from tests.fakes.telegram import FakeTelegramServer
from tests.support.helpers import sent, texts

LIST = "/admin/support/ticket/"


def make_ticket(
    user_id: int, text: str, *, name: str = "Alice", age: timedelta | None = None
) -> Ticket:
    entry, _ = services.ticket_open(
        bot_id=123456789,
        user_id=user_id,
        chat_id=user_id,
        author=Author(name=name, telegram_id=user_id),
        origin=Origin(update_id=next_update_id(), chat_id=user_id, message_id=1),
        content=Content(kind="text", text=text),
    )
    if age is not None:
        Ticket.objects.filter(pk=entry.ticket_id).update(created_at=timezone.now() - age)
    return Ticket.objects.get(pk=entry.ticket_id)


def numbers(page: str) -> list[str]:
    return re.findall(r">#(\d+)</a>", page)


def detail(admin_client: Client, ticket: Ticket) -> str:
    return admin_client.get(f"{LIST}{ticket.pk}/change/").content.decode()


def form_token(page: str, form_id: str) -> str:
    form = page.split(f'id="{form_id}"', 1)[1]
    return re.search(r'name="form_token" value="([0-9a-f-]+)"', form)[1]  # type: ignore[index]


def test_the_list_filters_by_status_age_and_assignee(
    bot: FakeTelegramServer, admin_client: Client
) -> None:
    make_ticket(1, "fresh")
    week = make_ticket(2, "three days old", age=timedelta(days=3))
    old = make_ticket(3, "ancient", age=timedelta(days=30))
    services.ticket_close(
        ticket_id=old.pk,
        by_user=True,
        author=Author("Alice", 3),
        origin=Origin(update_id=next_update_id()),
    )
    services.ticket_reply(
        ticket_id=week.pk,
        author=Author("bob"),
        origin=Origin(form_token=uuid.uuid4()),
        content=Content("text", "hi"),
    )
    assert sorted(numbers(admin_client.get(LIST).content.decode())) == ["1", "2", "3"]
    assert sorted(numbers(admin_client.get(f"{LIST}?status=open").content.decode())) == ["1", "2"]
    assert numbers(admin_client.get(f"{LIST}?status=closed").content.decode()) == ["3"]
    assert numbers(admin_client.get(f"{LIST}?age=day").content.decode()) == ["1"]
    assert numbers(admin_client.get(f"{LIST}?age=week").content.decode()) == ["2"]
    assert numbers(admin_client.get(f"{LIST}?age=older").content.decode()) == ["3"]
    assert numbers(admin_client.get(f"{LIST}?assignee=site:bob").content.decode()) == ["2"]
    assert sorted(numbers(admin_client.get(f"{LIST}?assignee=-").content.decode())) == ["1", "3"]


def test_the_list_searches_numbers_names_and_conversation_text(
    bot: FakeTelegramServer, admin_client: Client
) -> None:
    make_ticket(1, "printer on fire", name="Alice")
    second = make_ticket(2, "login fails", name="Bob")
    services.ticket_add_user_message(
        ticket_id=second.pk,
        author=Author("Bob", 2),
        origin=Origin(update_id=next_update_id()),
        content=Content("text", "error code E42"),
        reopen=False,
    )
    assert numbers(admin_client.get(f"{LIST}?q=%232").content.decode()) == ["2"]
    assert numbers(admin_client.get(f"{LIST}?q=Alice").content.decode()) == ["1"]
    assert numbers(admin_client.get(f"{LIST}?q=E42").content.decode()) == ["2"]
    assert numbers(admin_client.get(f"{LIST}?q=nothing-like-this").content.decode()) == []


def test_times_are_shown_per_ticket_and_on_average(
    bot: FakeTelegramServer, admin_client: Client
) -> None:
    now = timezone.now()
    first = make_ticket(1, "one")
    second = make_ticket(2, "two")
    Ticket.objects.filter(pk=first.pk).update(
        created_at=now - timedelta(hours=5),
        first_response_at=now - timedelta(hours=4),  # 1 h
        closed_at=now - timedelta(hours=1),  # 4 h
        status="closed",
    )
    Ticket.objects.filter(pk=second.pk).update(
        created_at=now - timedelta(hours=5),
        first_response_at=now - timedelta(hours=2),  # 3 h
    )
    page = admin_client.get(LIST).content.decode()
    assert re.search(r'id="avg-first-response">2h 0m<', page)
    assert re.search(r'id="avg-resolution">4h 0m<', page)
    assert "(2 answered)" in page and "(1 resolved)" in page
    page = detail(admin_client, first)
    assert re.search(r'id="ticket-first-response">1h 0m<', page)
    assert re.search(r'id="ticket-resolution">4h 0m<', page)


def test_the_detail_page_shows_the_whole_conversation(
    bot: FakeTelegramServer, admin_client: Client
) -> None:
    ticket = make_ticket(1, "first words")
    services.ticket_add_user_message(
        ticket_id=ticket.pk,
        author=Author("Alice", 1),
        origin=Origin(update_id=next_update_id()),
        content=Content("photo", "a caption", file_id="file-123"),
        reopen=False,
    )
    services.ticket_reply(
        ticket_id=ticket.pk,
        author=Author("bob"),
        origin=Origin(form_token=uuid.uuid4()),
        content=Content("text", "the answer"),
    )
    services.ticket_close(
        ticket_id=ticket.pk,
        by_user=False,
        author=Author("bob"),
        origin=Origin(form_token=uuid.uuid4()),
    )
    page = detail(admin_client, ticket)
    positions = [
        page.index(part)
        for part in ("first words", "file-123", "a caption", "the answer", "[resolved by support]")
    ]
    assert positions == sorted(positions)
    assert 'id="reopen-form"' in page and 'id="reply-form"' not in page


def test_a_reply_from_the_admin_site_reaches_the_user_once(
    bot: FakeTelegramServer, admin_client: Client
) -> None:
    ticket = make_ticket(2001, "where is my parcel")
    page = detail(admin_client, ticket)
    token = form_token(page, "reply-form")
    response = admin_client.post(
        f"{LIST}{ticket.pk}/reply/", {"text": "It is on its way.", "form_token": token}, follow=True
    )
    assert "Reply sent to the user of ticket #1." in response.content.decode()
    assert texts(bot, 2001) == ["Support · ticket #1\n\nIt is on its way."]
    # The same form submitted twice (a double click) sends one answer.
    admin_client.post(
        f"{LIST}{ticket.pk}/reply/", {"text": "It is on its way.", "form_token": token}
    )
    assert len(texts(bot, 2001)) == 1
    ticket.refresh_from_db()
    assert ticket.assignee == "site:admin" and ticket.first_response_at is not None
    assert "It is on its way." in detail(admin_client, ticket)


def test_a_nul_character_in_an_admin_site_reply_is_dropped(
    bot: FakeTelegramServer, admin_client: Client
) -> None:
    """A client can post anything; PostgreSQL's text columns cannot hold NUL (a 500 there)."""
    ticket = make_ticket(2001, "hello")
    form = {"text": "Hi\x00 there", "form_token": str(uuid.uuid4())}
    response = admin_client.post(f"{LIST}{ticket.pk}/reply/", form, follow=True)
    assert response.status_code == 200
    assert texts(bot, 2001) == ["Support · ticket #1\n\nHi there"]
    assert "Hi there" in detail(admin_client, ticket)
    nothing = {"text": "\x00 \x00", "form_token": str(uuid.uuid4())}
    response = admin_client.post(f"{LIST}{ticket.pk}/reply/", nothing, follow=True)
    assert "The message is empty" in response.content.decode()
    assert len(texts(bot, 2001)) == 1


def test_an_admin_site_reply_to_a_blocked_user_is_reported_and_can_be_retried(
    bot: FakeTelegramServer, admin_client: Client
) -> None:
    ticket = make_ticket(2001, "hello")
    bot.block_chat(2001)
    response = admin_client.post(
        f"{LIST}{ticket.pk}/reply/", {"text": "Hi!", "form_token": str(uuid.uuid4())}, follow=True
    )
    page = response.content.decode()
    assert "Not delivered to the user: the user blocked the bot" in page
    assert DeliveryFailure.objects.filter(chat_id=2001).exists()
    entry = TicketMessage.objects.get(sender="admin")
    assert entry.delivery_state == "not delivered"
    bot.unblock_chat(2001)
    response = admin_client.post(f"{LIST}{ticket.pk}/entries/{entry.pk}/retry/", follow=True)
    assert "Delivered to the user." in response.content.decode()
    assert texts(bot, 2001) == ["Support · ticket #1\n\nHi!"]


@pytest.mark.parametrize("text", ["", "   ", "x" * 4001])
def test_an_empty_or_oversized_site_reply_is_refused(
    bot: FakeTelegramServer, admin_client: Client, text: str
) -> None:
    ticket = make_ticket(2001, "hello")
    response = admin_client.post(
        f"{LIST}{ticket.pk}/reply/", {"text": text, "form_token": str(uuid.uuid4())}, follow=True
    )
    page = response.content.decode()
    assert "The message is empty" in page or "too long" in page
    assert not TicketMessage.objects.filter(sender="admin").exists()
    assert sent(bot) == []


def test_resolve_and_reopen_from_the_admin_site_tell_the_user(
    bot: FakeTelegramServer, admin_client: Client
) -> None:
    ticket = make_ticket(2001, "hello")
    admin_client.post(f"{LIST}{ticket.pk}/resolve/", {"form_token": str(uuid.uuid4())})
    ticket.refresh_from_db()
    assert (ticket.status, ticket.closed_by) == ("closed", "admin")
    assert texts(bot, 2001)[-1].startswith("Ticket #1 was resolved by support.")
    response = admin_client.post(
        f"{LIST}{ticket.pk}/reply/", {"text": "late", "form_token": str(uuid.uuid4())}, follow=True
    )
    assert "Ticket #1 is closed; reopen it before answering." in response.content.decode()
    admin_client.post(f"{LIST}{ticket.pk}/reopen/", {"form_token": str(uuid.uuid4())})
    ticket.refresh_from_db()
    assert ticket.status == "open" and ticket.reopened_count == 1
    assert texts(bot, 2001)[-1] == "Support reopened ticket #1. Reply to this message to add to it."
    response = admin_client.post(
        f"{LIST}{ticket.pk}/reopen/", {"form_token": str(uuid.uuid4())}, follow=True
    )
    assert "Ticket #1 is already open." in response.content.decode()


def test_the_ticket_pages_are_for_staff_only(bot: FakeTelegramServer, client: Client) -> None:
    ticket = make_ticket(2001, "hello")
    for url in (LIST, f"{LIST}{ticket.pk}/change/"):
        response = client.get(url)
        assert response.status_code == 302 and "/admin/login/" in response["Location"]
    response = client.post(f"{LIST}{ticket.pk}/reply/", {"text": "x"})
    assert response.status_code == 302
    assert sent(bot) == []


def test_actions_on_a_missing_ticket_are_404(bot: FakeTelegramServer, admin_client: Client) -> None:
    assert admin_client.get(f"{LIST}999/change/").status_code == 404
    assert admin_client.post(f"{LIST}999/reply/", {"text": "x"}).status_code == 404
    assert admin_client.get(f"{LIST}999/reply/").status_code == 404


def test_the_assignee_is_shown_by_name_not_by_id(
    bot: FakeTelegramServer, admin_client: Client
) -> None:
    by_telegram = make_ticket(1, "first")
    by_site = make_ticket(2, "second")
    unanswered = make_ticket(3, "third")
    for ticket, author in [(by_telegram, Author("Carol Admin", 555)), (by_site, Author("bob"))]:
        services.ticket_reply(
            ticket_id=ticket.pk,
            author=author,
            origin=Origin(form_token=uuid.uuid4()),
            content=Content("text", "on it"),
        )
    assert Ticket.objects.get(pk=by_telegram.pk).assignee == "tg:555"
    page = admin_client.get(LIST).content.decode()
    cells = re.findall(
        r'<td class="[^"]*\bfield-assignee_display\b[^"]*"[^>]*>\s*([^<]*?)\s*</td>', page
    )
    assert sorted(cells) == ["Carol Admin", "bob", "—"]
    assert "tg:555" not in page.split('id="changelist-filter"')[0]
    filters = page.split('id="changelist-filter"')[1]
    assert "Carol Admin" in filters and "?assignee=tg%3A555" in filters
    assert 'id="ticket-assignee" title="tg:555">Carol Admin<' in detail(admin_client, by_telegram)
    assert 'id="ticket-assignee">unassigned<' in detail(admin_client, unanswered)
    # An admin who never signed an answer: the bot-admin name, else the id in words.
    BotAdmin.objects.create(telegram_id=778, display_name="Eve")
    assert assignee_names(["tg:777", "tg:778", "site:dave", "weird", "tg:\u00b2"]) == {
        "tg:777": "Telegram user 777",
        "tg:778": "Eve",
        "site:dave": "dave",
        "weird": "weird",
        "tg:\u00b2": "tg:\u00b2",  # a digit to str.isdigit(), not to int(): shown as it is
    }


def test_erasure_clears_where_every_message_of_their_tickets_came_from(
    bot: FakeTelegramServer,
) -> None:
    """A staff member's answer in the ticket came from the staff group's topic: after the
    ticket is erased its link back to that message goes too (the tickets are found by id,
    not by the user id they no longer hold)."""
    from support import privacy
    from telegram_bot.privacy import Subject
    from telegram_bot.state import get_store

    ticket = make_ticket(4242, "help")
    TicketMessage.objects.create(
        ticket=ticket,
        sender=TicketMessage.Sender.ADMIN,
        kind="text",
        text="on it",
        source_chat_id=-1001234567890,
        source_message_id=77,
    )
    subject = Subject(user_id=4242, anonymous_id=2**52 + 4242, marker_prefix="e:t:")
    privacy.erase(subject, get_store())
    assert not TicketMessage.objects.filter(ticket=ticket, source_message_id__isnull=False).exists()
