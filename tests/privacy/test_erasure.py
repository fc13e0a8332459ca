"""Export and erasure across every app, with one member present in every table and key family
that holds personal data."""

from __future__ import annotations

import json

import pytest
from django.core.serializers.json import DjangoJSONEncoder

from stats.models import DailyUserStat
from telegram_bot.audit import Actor
from telegram_bot.models import AuditEntry
from telegram_bot.privacy import ERASE_ACTION, RUN_PREFIX, erase_user, export_user
from telegram_bot.state import KVStore
from tests.conftest import REDIS_URL
from tests.privacy.seed import (
    OTHER,
    USER,
    chat_totals,
    holds,
    kv_totals,
    personal_declared,
    seed,
    traces,
)

pytestmark = pytest.mark.django_db(transaction=True)
OPERATOR = Actor(None, "site:operator")


def test_the_seed_puts_the_member_in_every_personal_table_and_key_family(
    store: KVStore,
) -> None:
    seed(store)
    expected = personal_declared()
    if REDIS_URL:
        expected.discard("telegram_bot.KVEntry")  # the KV store is Redis, not the table
    found = traces(store)
    assert expected - set(found) == set()
    # The statistics' members by id: counters, a closed day's late marker, the failed-write index
    for prefix in ("stats:messages:", "stats:hour:", "stats:late:", "stats:failed:", "msg:"):
        assert any(key.startswith(prefix) for key in found["stats"] + found["msg"]), prefix


def test_the_export_holds_every_app_s_data_about_the_member(store: KVStore) -> None:
    seed(store)
    document = export_user(USER)
    json.dumps(document, cls=DjangoJSONEncoder)  # one JSON file
    assert {label for label, section in document["apps"].items() if holds(section)} == set(
        document["apps"]
    )
    tickets = document["apps"]["support"]["tickets"]
    assert tickets and "Zebulon" in tickets[0]["messages"][0]["text"]
    assert len(document["apps"]["stats"]["daily"]) == 5  # two chats, two days; a closed month's
    assert len(document["apps"]["stats"]["monthly"]) == 1  # that month's sums
    assert not any(row.get("user_id") == OTHER for row in document["apps"]["stats"]["daily"])


def test_after_erasure_no_table_or_key_holds_the_member_and_totals_stay(
    store: KVStore,
) -> None:
    seed(store)
    totals, kv_before = chat_totals(), kv_totals(store)
    other_rows = list(DailyUserStat.objects.filter(user_id=OTHER).values())
    assert traces(store)

    result = erase_user(USER, actor=OPERATOR, source="admin")

    assert traces(store) == {}
    assert chat_totals() == totals
    assert kv_totals(store) == kv_before
    assert list(DailyUserStat.objects.filter(user_id=OTHER).values()) == other_rows
    assert result.counts["stats"]["days"] == 5
    assert result.counts["support"]["tickets"] == 1
    entry = AuditEntry.objects.get(action=ERASE_ACTION)
    assert entry.pk == result.audit_id and entry.actor_name == "site:operator"
    assert not holds(entry.detail) and "support" in entry.detail
    assert list(store.scan_all(RUN_PREFIX)) == []


def test_erasing_again_changes_nothing_and_records_it(store: KVStore) -> None:
    seed(store)
    erase_user(USER, actor=OPERATOR, source="admin")
    rows = list(DailyUserStat.objects.order_by("pk").values())
    again = erase_user(USER, actor=OPERATOR, source="admin")
    assert again.counts == {}
    assert list(DailyUserStat.objects.order_by("pk").values()) == rows
    assert AuditEntry.objects.filter(action=ERASE_ACTION).count() == 2
    assert AuditEntry.objects.filter(action=ERASE_ACTION).first().detail == "nothing was held"
