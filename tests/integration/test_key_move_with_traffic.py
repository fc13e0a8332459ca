"""The move of a live deployment's KV keys to the bot's id (``manage.py move_state_keys``) on a
real Redis (and on the database backend, the embedded default) while updates flow (issue 38
item 4).

A deployment of the format before (unscoped keys) counts messages; then the product runs
scoped (``STATE_KEYS_BY_BOT``) and a thread keeps sending new messages, of the same members
and the same groups of 100 update ids, and re-delivering earlier ones, while the command
moves the keys. Afterwards every member's counter is the number of their messages, no key of
the old format is left, and every update, sent before, during or after the move, is answered
as a duplicate when it comes again.
"""

from __future__ import annotations

import gc
import threading
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection

from stats.config import counting_config_clear
from telegram_bot.pipeline.process import Outcome, process_update
from telegram_bot.state import KVStore, open_store, override_store, scoping_bot
from telegram_bot.state.memory import MemoryStore
from telegram_bot.state.scoping import scoped_bots, unscoped_name
from tests.builders import make_message_update
from tests.conftest import REDIS_URL, SKIPPED_BACKENDS
from tests.fakes.telegram import FakeTelegramServer

pytestmark = pytest.mark.django_db(transaction=True)

GROUP = -100778
FIRST_UPDATE = 7_100_000_000
MEMBERS = 120  # distinct members: each has counters, a last message, a language of its own
BEFORE = 240  # messages of the deployment before the upgrade


def message(update_id: int) -> dict[str, Any]:
    """Update ``update_id``: a message of member ``update_id % MEMBERS`` in GROUP."""
    user_id = 5000 + update_id % MEMBERS
    update = make_message_update("three small words", chat_id=GROUP, user_id=user_id)
    update["update_id"] = update_id
    update["message"]["message_id"] = update_id - FIRST_UPDATE + 1
    update["message"]["chat"]["type"] = "supergroup"
    return update


def counted(store: KVStore) -> dict[int, int]:
    day = datetime.now(UTC).date().isoformat()
    keys = [f"stats:messages:{GROUP}:{day}:{5000 + m}" for m in range(MEMBERS)]
    return {5000 + m: int(v or 0) for m, v in enumerate(store.get_many(keys))}


@pytest.fixture(params=["redis", "db"])
def stores(request: pytest.FixtureRequest) -> Iterator[tuple[KVStore, KVStore]]:
    """The deployment's storage as the version before saw it (unscoped) and as this one does."""
    if request.param == "redis" and not REDIS_URL:
        SKIPPED_BACKENDS.add("redis")
        pytest.skip("the key move on a live Redis: REDIS_URL not set")
    url, prefix = (
        (REDIS_URL, f"move{time.monotonic_ns()}:") if request.param == "redis" else ("db://", "")
    )
    old = open_store(url, prefix=prefix)
    new = open_store(url, prefix=prefix, bot=scoping_bot())
    counting_config_clear()
    yield old, new
    if request.param == "redis":
        client = old.client  # type: ignore[attr-defined]
        for key in client.scan_iter(match=f"{prefix}*", count=1000):
            client.delete(key)
    old.close()
    new.close()
    counting_config_clear()


def test_the_keys_move_while_updates_flow(
    bot: FakeTelegramServer, stores: tuple[KVStore, KVStore]
) -> None:
    old, new = stores
    sent: Counter[int] = Counter()  # messages processed, by member
    # The version before, in a store of its own: gone with it (the process's heartbeat would
    # keep writing the old format for a claim's TTL, as a process of that version still
    # running would: the move would not finish).
    before = open_store(old.url, prefix=old.prefix)
    with override_store(before):
        for update_id in range(FIRST_UPDATE, FIRST_UPDATE + BEFORE):
            assert process_update(message(update_id)) == Outcome.PROCESSED
            sent[5000 + update_id % MEMBERS] += 1
    before.close()
    del before
    gc.collect()
    assert counted(old) == dict(sent)
    legacy = [key for key in old.raw_keys() if unscoped_name(old, key, set()) is not None]
    assert len(legacy) > MEMBERS  # counters, last messages, markers, the buffer...

    moving = threading.Event()
    stop = threading.Event()
    during = Counter[str]()
    outcomes: dict[int, list[Outcome]] = {}
    errors: list[BaseException] = []
    next_id = FIRST_UPDATE + BEFORE

    def traffic() -> None:
        nonlocal next_id
        try:
            while not stop.is_set():
                update_id = next_id
                outcome = process_update(message(update_id))
                outcomes.setdefault(update_id, []).append(outcome)
                if outcome == Outcome.PROCESSED:
                    sent[5000 + update_id % MEMBERS] += 1
                next_id += 1
                # Telegram re-sends one of the updates done before the upgrade, and one of now.
                again = FIRST_UPDATE + (update_id * 7919) % BEFORE
                outcomes.setdefault(again, []).append(process_update(message(again)))
                outcomes[update_id].append(process_update(message(update_id)))
                if moving.is_set():
                    during["updates"] += 1
        except BaseException as exc:  # reported by the test below
            errors.append(exc)
        finally:
            connection.close()

    with override_store(new):
        assert new.reads_unscoped()
        thread = threading.Thread(target=traffic)
        thread.start()
        while next_id < FIRST_UPDATE + BEFORE + 20 and thread.is_alive():
            time.sleep(0.01)  # traffic flows on the new format before the move starts
        out = StringIO()
        moving.set()
        call_command("move_state_keys", "--page", "50", stdout=out)
        moving.clear()
        end = next_id + 20
        while next_id < end and thread.is_alive():
            time.sleep(0.01)
        stop.set()
        thread.join(60)
        assert not errors, errors
        assert not thread.is_alive()

        assert "Finished" in out.getvalue(), out.getvalue()
        assert during["updates"] >= 1, "no update was processed while the keys moved"
        assert not new.reads_unscoped()
        # Every member's counter: the number of their messages, before, during and after.
        assert counted(new) == dict(sent)
        assert sum(sent.values()) == next_id - FIRST_UPDATE
        # No key of the old format is left.
        bots = scoped_bots(new)
        assert [key for key in new.raw_keys() if unscoped_name(new, key, bots) is not None] == []
        # Every re-delivery was a duplicate, and is one now.
        for update_id, seen in outcomes.items():
            again = seen if update_id < FIRST_UPDATE + BEFORE else seen[1:]
            assert update_id < FIRST_UPDATE + BEFORE or seen[0] == Outcome.PROCESSED
            assert again and all(o == Outcome.DUPLICATE for o in again), (update_id, seen)
        for update_id in range(FIRST_UPDATE, next_id):
            assert process_update(message(update_id)) == Outcome.DUPLICATE, update_id
        assert counted(new) == dict(sent)
        # Running it again changes nothing.
        call_command("move_state_keys", stdout=StringIO())
        assert counted(new) == dict(sent)


def test_two_bots_sharing_one_store_each_handle_the_same_update(bot: FakeTelegramServer) -> None:
    """Two bots in the same group get updates with the same ids (each bot counts its own):
    through the pipeline, neither bot's done-marker or counter is the other's."""
    first = MemoryStore(bot=7_000_000_001)
    second = MemoryStore(bot=7_000_000_002)
    second._data, second._sorted, second._lock = first._data, first._sorted, first._lock
    counting_config_clear()
    update_id = FIRST_UPDATE + 5
    for store in (first, second):
        with override_store(store):
            assert process_update(message(update_id)) == Outcome.PROCESSED
            assert process_update(message(update_id)) == Outcome.DUPLICATE
    for store in (first, second):
        assert counted(store)[5000 + update_id % MEMBERS] == 1
