"""Retention: the settings, and the daily purge that enforces them."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from community.records import JoinRequestRecord, JoinRequestStore
from support.models import Ticket, TicketMessage
from telegram_bot.audit import Actor, audit_record
from telegram_bot.models import AuditEntry
from telegram_bot.privacy import is_anonymous
from telegram_bot.schedules import SCHEDULES
from telegram_bot.state import KVStore
from telegram_bot.tasks import privacy_retention
from tests.unit.config.test_settings import BASE_ENV, run_manage

pytestmark = pytest.mark.django_db(transaction=True)


def ticket(number: int, *, closed_days_ago: int | None) -> Ticket:
    closed = closed_days_ago is not None
    row = Ticket.objects.create(
        bot_id=1,
        number=number,
        user_id=4242,
        chat_id=4242,
        user_name="Ann",
        subject="my problem",
        opened_update_id=number,
        status=Ticket.Status.CLOSED if closed else Ticket.Status.OPEN,
        closed_at=timezone.now() - timedelta(days=closed_days_ago) if closed else None,
    )
    TicketMessage.objects.create(
        ticket=row, sender="user", kind="text", text="private words", author_id=4242
    )
    return row


def join_request(store: KVStore, token: str, days_ago: int) -> None:
    now = int(time.time())
    record = JoinRequestRecord(
        token=token,
        chat_id=-100,
        chat_title="G",
        chat_type="supergroup",
        user_id=7,
        user_chat_id=7,
        user_name="Bo",
        member_name="Bo",
        summary="bio",
        requested_at=now - days_ago * 86_400,
        expires_at_ms=(now + 3600) * 1000,
    )
    store.set(JoinRequestStore.key(token), record.to_json(), 3_600_000)


def test_the_purge_is_a_daily_schedule() -> None:
    [spec] = [spec for spec in SCHEDULES if spec.name == "privacy_retention"]
    assert spec.func == "telegram_bot.tasks.privacy_retention" and spec.minutes == 24 * 60


def test_each_kind_is_purged_after_its_setting(store: KVStore, settings: Any) -> None:
    settings.AUDIT_LOG_RETENTION_DAYS = 30
    settings.SUPPORT_CLOSED_TICKET_RETENTION_DAYS = 90
    settings.JOIN_REQUEST_RETENTION_DAYS = 3
    old_entry = audit_record(action="warn", actor=Actor(1, "a"), source="command")
    new_entry = audit_record(action="warn", actor=Actor(1, "a"), source="command")
    assert old_entry and new_entry
    AuditEntry.objects.filter(pk=old_entry.pk).update(
        created_at=timezone.now() - timedelta(days=31)
    )
    old, recent, still_open = (
        ticket(1, closed_days_ago=91),
        ticket(2, closed_days_ago=10),
        ticket(3, closed_days_ago=None),
    )
    join_request(store, "oldrequest00", days_ago=4)
    join_request(store, "newrequest00", days_ago=1)

    removed = privacy_retention()

    assert removed["telegram_bot"]["audit_entries"] == 1
    assert list(AuditEntry.objects.values_list("pk", flat=True)) == [new_entry.pk]
    assert removed["support"]["tickets"] == 1
    old.refresh_from_db()
    assert old.number == 1 and is_anonymous(old.user_id) and old.user_name == ""
    assert TicketMessage.objects.get(ticket=old).text == ""
    for kept in (recent, still_open):
        kept.refresh_from_db()
        assert kept.user_id == 4242 and TicketMessage.objects.get(ticket=kept).text
    assert removed["community"]["join_requests"] == 1
    assert store.get(JoinRequestStore.key("oldrequest00")) is None
    assert store.get(JoinRequestStore.key("newrequest00")) is not None
    assert privacy_retention()["support"]["tickets"] == 0  # nothing twice


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("AUDIT_LOG_RETENTION_DAYS", "0"),
        ("SUPPORT_CLOSED_TICKET_RETENTION_DAYS", "forever"),
        ("JOIN_REQUEST_RETENTION_DAYS", "8"),
    ],
)
def test_a_bad_retention_setting_stops_the_process(name: str, value: str) -> None:
    result = run_manage({**BASE_ENV, name: value})
    assert result.returncode != 0
    assert name in result.stderr.strip().splitlines()[0]
