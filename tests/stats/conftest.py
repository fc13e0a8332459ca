"""Fixtures of the stats tests: the bot wired to a KV store of each backend."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import pytest

from stats.config import counting_config_clear
from stats.live_writer import coverage_memo_clear
from telegram_bot.state import KVStore, override_store
from tests.conftest import OWNER_ID, WEBHOOK_SECRET
from tests.fakes.telegram import FakeTelegramServer


@pytest.fixture(autouse=True)
def _fresh_stats_caches() -> Iterator[None]:
    """The settings cache and the live writer's coverage memo outlive a test's database."""
    counting_config_clear()
    coverage_memo_clear()
    yield
    counting_config_clear()
    coverage_memo_clear()


def wire_stats(settings: Any, fake_telegram: FakeTelegramServer) -> None:
    """The product on the fake Bot API, for the stats tests. The backfill's clock-skew margin
    is 0: poison and rebuild happen within milliseconds of each other here."""
    settings.TELEGRAM_API_BASE_URL = fake_telegram.base_url
    settings.OWNER_TELEGRAM_ID = OWNER_ID
    settings.ADMIN_TELEGRAM_IDS = []
    settings.ALLOWED_CHAT_IDS = []
    settings.TELEGRAM_WEBHOOK_SECRET = WEBHOOK_SECRET
    settings.STATS_BACKFILL_CLOCK_SKEW_MS = 0


def anti_flood(fake: FakeTelegramServer, chats: Iterable[int], *, seconds: int) -> None:
    """Anti-flood at its lowest (more than 2 messages in ``seconds``) in ``chats``, the bot an
    admin there on the fake Bot API, so that its mute goes through."""
    from moderation.models import ChatSettings
    from tests.moderation.helpers import BOT_ID, FULL

    for chat_id in chats:
        fake.set_chat(chat_id, "supergroup", title=f"Group {chat_id}")
        fake.set_chat_member(chat_id, BOT_ID, "administrator", is_bot=True, **FULL)
        ChatSettings.objects.create(chat_id=chat_id, flood_messages=2, flood_seconds=seconds)


@pytest.fixture
def wired(
    fake_telegram: FakeTelegramServer, settings: Any, db: None, kv: KVStore
) -> Iterator[KVStore]:
    """The product on the fake Bot API with ``kv`` (memory, database, Redis) as its KV store.

    Yields the store. The backfill's clock-skew margin is 0: poison and rebuild happen within
    milliseconds of each other here.
    """
    wire_stats(settings, fake_telegram)
    with override_store(kv):
        yield kv
