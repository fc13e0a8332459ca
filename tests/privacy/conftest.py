"""The product on the fake Bot API with a shared KV store: Redis when REDIS_URL is set (CI runs
these on PostgreSQL + Redis), else the database backend."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from stats.config import counting_config_clear
from stats.live_writer import coverage_memo_clear
from telegram_bot.state import KVStore, override_store
from tests.conftest import REDIS_URL, make_store, wire_bot
from tests.fakes.telegram import FakeTelegramServer


@pytest.fixture
def store(
    request: pytest.FixtureRequest, fake_telegram: FakeTelegramServer, settings: Any
) -> Iterator[KVStore]:
    wire_bot(settings, fake_telegram)
    settings.STATS_BACKFILL_CLOCK_SKEW_MS = 0
    counting_config_clear()
    coverage_memo_clear()
    for kv in make_store(request, "redis" if REDIS_URL else "db"):
        with override_store(kv):
            yield kv
    counting_config_clear()
    coverage_memo_clear()
