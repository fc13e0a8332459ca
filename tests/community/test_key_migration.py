"""Join requests stored by versions up to 0.2 under the core's ``lock:`` family are moved to
community's ``jr:`` family by the data migration, on the database and Redis KV backends: run
twice and by racing threads, they move once, keep their values, and work afterwards."""

from __future__ import annotations

import importlib
import threading
from collections.abc import Iterator

import pytest
from django.db import connections

from community.records import legacy_keys_move
from telegram_bot.pipeline import idempotency
from telegram_bot.pipeline.process import Outcome, process_update
from telegram_bot.state import KVStore, override_store
from tests.builders import make_join_request_update
from tests.community.helpers import (
    button_data,
    copy_of,
    edits_to,
    notifications,
    press_update,
    succeeded,
)
from tests.conftest import OWNER_ID
from tests.fakes.telegram import FakeTelegramServer

OLD = {"jr:r:": "lock:jr:", "jr:q:": "lock:jrq:", "jr:u:": "lock:jru:"}


@pytest.fixture
def store(shared_kv: KVStore, bot: FakeTelegramServer) -> Iterator[KVStore]:
    """The database and the Redis backend in turn, as the product's store."""
    with override_store(shared_kv):
        yield shared_kv


def keys(store: KVStore, prefix: str) -> list[str]:
    return sorted(store.scan_all(prefix))


def as_stored_by_0_2(store: KVStore) -> dict[str, object]:
    """Move every ``jr:`` key back where versions up to 0.2 kept it; return old key -> value."""
    old = {}
    for key in keys(store, "jr:"):
        new_prefix = key[:5]
        value = store.get(key)
        old[OLD[new_prefix] + key[5:]] = value
        store.set(OLD[new_prefix] + key[5:], value, 3_600_000)
        store.delete(key)
    return old


@pytest.mark.timeout(60)
def test_pending_requests_of_0_2_are_moved_once_and_still_decided(
    bot: FakeTelegramServer, store: KVStore
) -> None:
    update = make_join_request_update(user_id=2002, chat_id=-100555)
    assert process_update(update) == Outcome.PROCESSED
    [notice] = notifications(bot)
    old = as_stored_by_0_2(store)
    assert sorted(key.split(":")[1] for key in old) == ["jr", "jrq", "jru"]
    store.set("lock:other", {"held": 1}, 60_000)  # the core's own locks stay
    store.set("lock:jr:garbage00000", "not a record", 60_000)  # unreadable: left to expire

    assert legacy_keys_move(store) == 3
    assert legacy_keys_move(store) == 0  # a second run moves nothing
    assert keys(store, "lock:") == ["lock:jr:garbage00000", "lock:other"]
    for old_key, value in old.items():
        prefix = next(new for new, was in OLD.items() if old_key.startswith(was))
        assert store.get(prefix + old_key.split(":", 2)[2]) == value

    # A re-delivery of the request (its first run's markers lost) finds its receipt: no second
    # notification.
    idempotency.forget(store, update["update_id"])
    assert process_update(update) == Outcome.PROCESSED
    assert len(notifications(bot)) == 1
    # The admin's button of the moved record decides it.
    data = button_data(notice)["Approve"]
    press = press_update(data, user_id=OWNER_ID, message_id=copy_of(data, OWNER_ID))
    assert process_update(press) == Outcome.PROCESSED
    assert len(succeeded(bot, "approveChatJoinRequest")) == 1
    assert edits_to(bot, OWNER_ID)


@pytest.mark.timeout(60)
def test_racing_runs_move_each_key_once(bot: FakeTelegramServer, store: KVStore) -> None:
    for user_id in range(3000, 3030):
        update = make_join_request_update(user_id=user_id, chat_id=-100555)
        assert process_update(update) == Outcome.PROCESSED
    old = as_stored_by_0_2(store)
    assert len(old) == 90
    moved: list[int] = []
    start = threading.Barrier(4)

    def run() -> None:
        try:
            start.wait()
            moved.append(legacy_keys_move(store))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(moved) == 90  # each key copied by one run only
    assert keys(store, "lock:") == []
    assert len(keys(store, "jr:r:")) == len(keys(store, "jr:q:")) == len(keys(store, "jr:u:"))
    assert {store.get(key) is not None for key in keys(store, "jr:")} == {True}


def test_the_data_migration_moves_the_keys_of_the_products_store(
    bot: FakeTelegramServer, store: KVStore
) -> None:
    assert process_update(make_join_request_update(user_id=2002)) == Outcome.PROCESSED
    as_stored_by_0_2(store)
    migration = importlib.import_module("community.migrations.0005_join_request_keys")

    class SchemaEditor:
        connection = connections["default"]

    migration.forwards(None, SchemaEditor())
    assert keys(store, "lock:") == []
    assert len(keys(store, "jr:")) == 3
