"""The support desk's operator actions in the audit log: reply, resolve, reopen and retry in
the admin site, resolve and answer in Telegram; failures with their reason; once per update."""

from __future__ import annotations

import uuid
from typing import Any

from django.test import Client

from support.models import TicketMessage
from telegram_bot.models import AuditEntry
from tests.conftest import OWNER_ID
from tests.fakes.telegram import FakeTelegramServer
from tests.support.helpers import button, last_message_id, message, reply_to
from tests.support.test_admin_site import LIST, make_ticket


def recorded() -> list[tuple[str, str, str, int | None, str]]:
    return [
        (e.action, e.source, e.target_name, e.target_id, e.outcome)
        for e in AuditEntry.objects.order_by("id")
    ]


def test_admin_site_actions_on_a_ticket_are_recorded(
    bot: FakeTelegramServer, admin_client: Client
) -> None:
    ticket = make_ticket(2001, "hello")
    url = f"{LIST}{ticket.pk}"
    bot.block_chat(2001)
    admin_client.post(f"{url}/reply/", {"text": "Hi!", "form_token": str(uuid.uuid4())})
    bot.unblock_chat(2001)
    entry = TicketMessage.objects.get(sender="admin")
    admin_client.post(f"{url}/entries/{entry.pk}/retry/")
    admin_client.post(f"{url}/resolve/", {"form_token": str(uuid.uuid4())})
    admin_client.post(f"{url}/reopen/", {"form_token": str(uuid.uuid4())})
    admin_client.post(f"{url}/reopen/", {"form_token": str(uuid.uuid4())})  # already open
    assert recorded() == [
        ("ticket.reply", "admin", "ticket #1", 2001, "failed"),
        ("ticket.retry_delivery", "admin", "ticket #1", 2001, "done"),
        ("ticket.resolve", "admin", "ticket #1", 2001, "done"),
        ("ticket.reopen", "admin", "ticket #1", 2001, "done"),
        ("ticket.reopen", "admin", "ticket #1", 2001, "failed"),
    ]
    first, *_, last = AuditEntry.objects.order_by("id")
    assert first.actor_name == "admin:admin"
    assert first.detail.startswith("not delivered: the user blocked the bot")
    assert last.detail == "Ticket #1 is already open."


def test_telegram_answers_and_resolve_buttons_are_recorded_once(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    post_update(message("/support my parcel", user_id=4000))
    notice = last_message_id(bot, OWNER_ID, "#1")
    answer = reply_to(notice, "On its way.", user_id=OWNER_ID)
    post_update(answer)
    post_update(answer)  # a re-delivery
    ticket_id = TicketMessage.objects.get(sender="user").ticket_id
    resolve = button(f"sup:resolve:{ticket_id}", user_id=OWNER_ID)
    post_update(resolve)
    post_update(resolve)  # a re-delivery
    assert recorded() == [
        ("ticket.reply", "command", "ticket #1", 4000, "done"),
        ("ticket.resolve", "button", "ticket #1", 4000, "done"),
    ]
    assert {e.actor_id for e in AuditEntry.objects.all()} == {OWNER_ID}
    assert AuditEntry.objects.filter(update_id=answer["update_id"]).count() == 1
