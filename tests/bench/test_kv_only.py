"""The bench's KV-only variant (``bench/kv_only.py``) counts in the KV store and writes no row,
and the product's own path, beside it, writes the row: the variant measures the add."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.apps import apps

from bench.kv_only import KvOnlyConfig
from stats import services
from stats.counting import MessageFacts
from stats.models import DailyUserStat
from stats.services import CountedMessage
from telegram_bot.state import open_store


def counted() -> CountedMessage:
    facts = MessageFacts(-100777, 7, 1, int(time.time()) - 60, "text", words=3)
    return CountedMessage(facts=facts, ops=[])


@pytest.mark.django_db
def test_the_kv_only_variant_commits_and_writes_no_row(monkeypatch: Any) -> None:
    store, commits = open_store("memory://"), []

    def commit(ops: Any) -> bool:
        commits.append(ops)
        return True

    assert services.stats_count_once(store=store, counted=counted(), commit=commit)
    assert DailyUserStat.objects.get(chat_id=-100777).word_count == 3  # the product adds
    DailyUserStat.objects.all().delete()

    monkeypatch.setattr(services, "count_once", services.count_once)  # undone after the test
    KvOnlyConfig("bench.kv_only", apps.get_app_config("stats").module).ready()
    assert services.stats_count_once(store=store, counted=counted(), commit=commit)
    assert len(commits) == 2 and not DailyUserStat.objects.exists()
