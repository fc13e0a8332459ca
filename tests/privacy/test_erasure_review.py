"""Erasure and export against what a review found: a message in flight during an erasure, an
audit entry whose words name the id, another member's pending moderation, and an admin's
export of other people's join requests."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from community.models import ChatPolicy
from support import delivery, flows
from support import services as support_services
from support.models import Ticket, TicketBotMessage, TicketMessage
from support.privacy import purge as support_purge
from support.services import Author, Origin
from support.validation import Content
from telegram_bot.audit import Actor
from telegram_bot.jobs.models import Job
from telegram_bot.models import AuditEntry, BotAdmin
from telegram_bot.pipeline.process import process_update
from telegram_bot.privacy import erase_user, export_user, is_anonymous
from telegram_bot.state import KVStore
from tests.builders import make_join_request_update, make_message_update
from tests.privacy.seed import OTHER, USER, person

pytestmark = pytest.mark.django_db(transaction=True)
OPERATOR = Actor(None, "site:operator")
CHAT = -100111


def private(text: str) -> dict[str, Any]:
    update = make_message_update(text, chat_id=USER, user_id=USER)
    update["message"]["from"] = person(USER)
    return update


def test_a_message_in_flight_during_the_erasure_does_not_land_in_the_erased_ticket(
    store: KVStore, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    process_update(private("/support Help me please"))
    real = support_services.ticket_add_user_message

    def erase_meanwhile(**kwargs: Any) -> Any:  # the erasure commits after the ticket's lookup
        erase_user(USER, actor=OPERATOR, source="admin")
        return real(**kwargs)

    monkeypatch.setattr(support_services, "ticket_add_user_message", erase_meanwhile)
    process_update(private("my phone is 555-0199"))
    monkeypatch.undo()
    assert not TicketMessage.objects.filter(text__contains="555-0199").exists()
    [ticket] = Ticket.objects.all()
    assert is_anonymous(ticket.user_id)


def test_the_retention_purge_also_empties_an_erased_ticket_that_holds_content(
    store: KVStore, settings: Any
) -> None:
    process_update(private("/support Help me please"))
    erase_user(USER, actor=OPERATOR, source="admin")
    ticket = Ticket.objects.get()
    TicketMessage.objects.filter(ticket=ticket).update(text="left behind somehow")
    Ticket.objects.filter(pk=ticket.pk).update(
        status=Ticket.Status.CLOSED, closed_at="2000-01-01T00:00:00Z"
    )
    assert support_purge(store) == {"tickets": 1}
    assert not TicketMessage.objects.exclude(text="").exists()


def test_an_audit_entry_whose_words_name_the_id_loses_them(
    store: KVStore, admin_client: Any
) -> None:
    admin_client.post(
        "/admin/telegram_bot/chatpreference/add/",
        {"chat_id": str(USER), "time_zone": "Europe/Moscow", "language": "ru"},
    )
    erase_user(USER, actor=OPERATOR, source="admin")
    entry = AuditEntry.objects.get(action="chatpreference.add")
    assert is_anonymous(entry.chat_id)
    assert str(USER) not in entry.target_name + entry.detail + entry.reason


def test_erasing_a_moderator_keeps_their_pending_ban_of_another_member(store: KVStore) -> None:
    def act(user_id: int, actor_id: int, update_id: int) -> Job:
        payload = {
            "chat_id": CHAT,
            "actor_id": actor_id,
            "actor_name": "Zebulon" if actor_id == USER else "Olga",
            "source": "command",
            "update_id": update_id,
            "action": "ban",
            "user_id": user_id,
            "name": "someone",
            "seconds": None,
            "reason": "spam",
        }
        key = f"mod:{CHAT}:{update_id}:ban:1"
        return Job.objects.create(kind="moderation.act", payload=payload, dedupe_key=key)

    theirs = act(OTHER, USER, 42)  # the erased moderator's ban of another member
    about = act(USER, OTHER, 43)  # a ban of the erased member
    erase_user(USER, actor=OPERATOR, source="admin")
    theirs.refresh_from_db()
    assert theirs.payload["user_id"] == OTHER and is_anonymous(theirs.payload["actor_id"])
    assert theirs.payload["actor_name"] == ""
    assert not Job.objects.filter(pk=about.pk).exists()


def test_an_admins_export_holds_their_part_of_other_peoples_join_requests_only(
    store: KVStore,
) -> None:
    BotAdmin.objects.create(telegram_id=USER, display_name="Zebulon")
    ChatPolicy.objects.create(chat_id=CHAT)
    join = make_join_request_update(user_id=OTHER, chat_id=CHAT, bio="Olga, nurse in Riga")
    join["chat_join_request"]["from"] = person(OTHER)
    process_update(join)
    section = export_user(USER)["apps"]["community"]
    assert "nurse in Riga" not in repr(section) and str(OTHER) not in repr(section)
    assert section["join_requests"] == []
    [part] = section["join_requests_handled"]
    assert part["chat_id"] == CHAT and [copy[0] for copy in part["copies"]] == [USER]
    requester = export_user(OTHER)["apps"]["community"]
    [record] = requester["join_requests"]
    assert "nurse in Riga" in record["summary"]


def test_an_answer_delivered_during_the_erasure_does_not_link_the_chat_to_the_ticket(
    store: KVStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    process_update(private("/support Help me please"))
    ticket = Ticket.objects.get(user_id=USER)
    real = delivery._send_user_message

    def erase_then_send(*args: Any, **kwargs: Any) -> Any:
        erase_user(USER, actor=OPERATOR, source="admin")
        return real(*args, **kwargs)

    monkeypatch.setattr(delivery, "_send_user_message", erase_then_send)
    flows.admin_reply(
        ticket_id=ticket.pk,
        author=Author("site:ann"),
        origin=Origin(form_token=uuid.uuid4()),
        content=Content(kind="text", text="Here is the answer"),
    )
    monkeypatch.undo()
    assert not TicketBotMessage.objects.filter(chat_id=USER).exists()
