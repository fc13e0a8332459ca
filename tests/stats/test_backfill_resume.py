"""A slice that stops in the middle of a page, and a key before its stopping point that expires
before the next slice: the resume must not skip the key after it (review finding: the saved
``page_offset`` counted positions in a page that had shifted left)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from stats import keys
from stats.backfill import Limits, backfill_run, lease_acquire, slice_run
from stats.models import BackfillState, DailyUserStat
from telegram_bot.state import KVStore

CHAT = -100666
DAY = datetime.now(UTC).date() - timedelta(days=1)
USERS = (1, 2, 3, 4, 5)
SHORT_TTL_MS = 300
# One base key may cost 4 statements (row, coverage, profile, chat), the state write and the
# day lock 2, and the next key 2 more (row, profile): each slice takes exactly one key of the
# page. (7: the smallest limit, what a finalize day needs.)
ONE_KEY = Limits(max_statements=7)


def seed(store: KVStore) -> None:
    for user_id in USERS:
        ttl = SHORT_TTL_MS if user_id == 1 else None
        store.increment(keys.counter_key(keys.MESSAGES, CHAT, DAY, user_id), 10 + user_id, ttl)
        store.increment(keys.activity_key(CHAT, DAY), 10 + user_id)


def test_a_resumed_page_skips_no_key_when_an_earlier_one_expired(kv: KVStore, db: None) -> None:
    seed(kv)
    lease = lease_acquire(owner="A", store=kv, force=True).lease
    assert lease is not None
    lease = slice_run(lease, ONE_KEY, kv).lease  # the hours phase: no hour counters here
    first = slice_run(lease, ONE_KEY, kv)
    assert first.keys == 1 and first.lease.phase == "base"
    time.sleep(SHORT_TTL_MS / 1000 + 0.2)  # user 1's counter expires

    assert backfill_run(owner="A", store=kv, limits=ONE_KEY).outcome == "done"

    rebuilt = dict(
        DailyUserStat.objects.filter(chat_id=CHAT, day=DAY).values_list("user_id", "message_count")
    )
    assert {user: rebuilt.get(user) for user in USERS[1:]} == {u: 10 + u for u in USERS[1:]}
    assert rebuilt.get(1) in (None, 11)  # taken before it expired, or gone with it


def test_an_ordered_store_resumes_strictly_after_the_last_key_taken(db: None) -> None:
    from telegram_bot.state import open_store

    store = open_store("memory://")
    seed(store)
    lease = lease_acquire(owner="A", store=store, force=True).lease
    assert lease is not None
    lease = slice_run(lease, ONE_KEY, store).lease  # the hours phase: no hour counters here
    first = slice_run(lease, ONE_KEY, store)
    saved = BackfillState.objects.get()
    assert saved.cursor == keys.counter_key(keys.MESSAGES, CHAT, DAY, 1)
    assert saved.page_offset == 0 and first.lease.cursor == saved.cursor
