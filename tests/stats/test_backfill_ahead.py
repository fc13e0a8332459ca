"""The run's memory between slices: the next slice's keys chosen in a thread while a slice
writes (Redis), and the member and chat names imported once a run, not once a slice."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from stats import keys
from stats.backfill import Limits, backfill_run, slices
from stats.models import ChatUserProfile, DailyUserStat, StatsChat
from telegram_bot.state import KVStore
from tests.stats.kvseed import seed_day
from tests.stats.test_backfill_batch import RoundTrips

CHATS = (-100881, -100882)
TODAY = datetime.now(UTC).date()
DAYS = [TODAY - timedelta(days=n) for n in (3, 2, 1)]
USERS = range(1, 13)
# Many slices a phase: every member meets several base slices.
SMALL = Limits(max_keys=10, max_reads=60, max_statements=40)


def seed(store: KVStore) -> dict[tuple[int, Any, int], tuple[int, int]]:
    truth = {}
    for chat_id in CHATS:
        store.set(keys.chat_key(chat_id), {"title": f"chat {chat_id}", "type": "supergroup"})
        for user_id in USERS:
            store.set(keys.last_message_key(chat_id, user_id), {"name": f"M{user_id}", "at": 1})
            for day in DAYS:
                messages = 1 + (user_id + day.day) % 5
                seed_day(store, chat_id, day, user_id, messages=messages, words=2 * messages)
                truth[(chat_id, day, user_id)] = (messages, 2 * messages)
    return truth


class NameReads(RoundTrips):
    """Counts the names read (``last_message:`` and ``stats:chat:`` keys)."""

    def __init__(self, inner: KVStore) -> None:
        super().__init__(inner)
        self.names = 0

    def _get_many(self, raw_keys: list[str]) -> list[str | None]:
        self.names += sum(1 for key in raw_keys if "last_message:" in key or "stats:chat:" in key)
        return super()._get_many(raw_keys)


def stored() -> dict[tuple[int, Any, int], tuple[int, int]]:
    return {
        (row.chat_id, row.day, row.user_id): (row.message_count, row.word_count)
        for row in DailyUserStat.objects.all()
    }


def test_names_are_read_once_a_run_not_once_a_slice(kv: KVStore, db: None) -> None:
    truth = seed(kv)
    store = NameReads(kv)
    report = backfill_run(owner="A", store=store, limits=SMALL, force=True)
    assert report.outcome == "done" and report.slices > 10
    assert stored() == truth
    # each member's name and each chat's title once (a base slice met them all again and again)
    assert store.names == len(CHATS) * len(USERS) + len(CHATS)
    assert ChatUserProfile.objects.count() == len(CHATS) * len(USERS)
    assert set(ChatUserProfile.objects.values_list("display_name", flat=True)) == {
        f"M{user_id}" for user_id in USERS
    }
    assert StatsChat.objects.count() == len(CHATS)


def test_a_paused_run_imports_the_names_again_when_it_goes_on(kv: KVStore, db: None) -> None:
    """The memory lasts one ``backfill_run``: a run that resumes reads the names again (the
    profiles of a run that was stopped are imported whatever happened in between)."""
    truth = seed(kv)
    store = NameReads(kv)
    first = backfill_run(owner="A", store=store, limits=SMALL, force=True, max_slices=8)
    assert first.outcome == "paused"
    ChatUserProfile.objects.all().delete()
    assert backfill_run(owner="A", store=store, limits=SMALL).outcome == "done"
    assert stored() == truth
    assert ChatUserProfile.objects.count() == len(CHATS) * len(USERS)


def test_the_next_slice_is_chosen_in_a_thread_on_redis(
    kv: KVStore, db: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On Redis the counter phases' next slice is chosen while a slice writes, in a thread;
    the result is the same. Elsewhere every slice is chosen in its own thread."""
    truth = seed(kv)
    threads: list[str] = []
    original = slices.slice_choose

    def choose(*args: Any) -> Any:
        threads.append(threading.current_thread().name)
        return original(*args)

    monkeypatch.setattr(slices, "slice_choose", choose)
    monkeypatch.setattr("stats.backfill.runner.slice_choose", choose)
    assert backfill_run(owner="A", store=kv, limits=SMALL, force=True).outcome == "done"
    assert stored() == truth
    ahead = [name for name in threads if name.startswith("backfill")]
    if kv.url.startswith("redis"):
        assert len(ahead) > len(threads) / 2  # most slices were chosen ahead
    else:
        assert not ahead
