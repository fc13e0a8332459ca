"""The stats app's per-process caches (cachetools TTL caches): the live writer's coverage memo
and the counting settings. A clock of the test's own stands in for the caches' timer."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import cachetools
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from stats import config, live_writer
from stats.live_writer import MEMO_SECONDS, RowDelta, live_write
from stats.models import StatsSettings
from telegram_bot.state import KVStore, open_store

CHAT = -100661
DAY = datetime.now(UTC).date() - timedelta(days=1)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store() -> KVStore:
    return open_store("memory://")


def coverage_writes(store: KVStore, user_id: int) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert live_write(store=store, rows=[RowDelta(CHAT, DAY, user_id, {"message_count": 1})])
    return sum("stats_daily_coverage" in query["sql"] for query in queries.captured_queries)


@pytest.mark.django_db(transaction=True)
def test_the_coverage_memo_skips_a_known_day_until_its_entry_ages_out(
    store: KVStore, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    memo = cachetools.TTLCache(maxsize=live_writer.MEMO_MAX, ttl=MEMO_SECONDS, timer=clock)
    monkeypatch.setattr(live_writer, "_memo", memo)
    assert coverage_writes(store, 1) == 1  # the day's first message: its coverage rows
    clock.now += MEMO_SECONDS - 1
    assert coverage_writes(store, 2) == 0  # known live: the add alone
    clock.now += 2  # the entry, remembered once, aged out: written again, then known
    assert coverage_writes(store, 3) == 1
    assert coverage_writes(store, 4) == 0


@pytest.mark.django_db(transaction=True)
def test_the_counting_settings_are_read_again_once_the_cached_copy_is_too_old(
    clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    ttl = config.settings.STATS_CONFIG_CACHE_SECONDS
    monkeypatch.setattr(config, "_cache", cachetools.TTLCache(maxsize=1, ttl=ttl, timer=clock))
    assert not config.counting_config().store_text
    StatsSettings.objects.update_or_create(pk=1, defaults={"store_message_text": True})
    with CaptureQueriesContext(connection) as queries:
        assert not config.counting_config().store_text  # the cached copy, no query
    assert not queries.captured_queries
    clock.now += ttl
    assert config.counting_config().store_text
