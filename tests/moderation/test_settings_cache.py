"""A chat's moderation settings are read from the database once per CACHE_SECONDS in a
process (cachetools' TTLCache), dropped when the row is saved, and bounded by CACHE_SIZE."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from moderation import conf
from moderation.models import ChatSettings

pytestmark = pytest.mark.django_db
CHAT = -100555


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [1000.0]
    monkeypatch.setattr(conf, "_clock", lambda: now[0])
    conf.forget()
    return now


def reads(chat_id: int) -> int:
    with CaptureQueriesContext(connection) as queries:
        conf.chat_settings(chat_id)
    return len(queries)


def test_it_reads_a_chat_once_per_cache_seconds(clock: list[float]) -> None:
    ChatSettings.objects.create(chat_id=CHAT, title="Group", warn_limit=5)
    assert reads(CHAT) == 1
    clock[0] += conf.CACHE_SECONDS - 1
    assert reads(CHAT) == 0
    assert conf.chat_settings(CHAT).warn_limit == 5
    clock[0] += 2
    assert reads(CHAT) == 1


def test_a_saved_row_is_read_again_at_once(clock: list[float]) -> None:
    conf.connect_signals()
    assert conf.chat_settings(CHAT).pk is None  # the defaults
    ChatSettings.objects.create(chat_id=CHAT, title="Group", warn_limit=7)
    assert conf.chat_settings(CHAT).warn_limit == 7


def test_it_keeps_at_most_cache_size_chats(clock: list[float], monkeypatch: Any) -> None:
    for chat_id in range(conf.CACHE_SIZE + 10):
        with conf._lock:
            conf._cache[chat_id] = ChatSettings(chat_id=chat_id)
    assert len(conf._cache) == conf.CACHE_SIZE
    assert reads(conf.CACHE_SIZE + 9) == 0  # the newest are kept
    assert reads(0) == 1  # the oldest went first
