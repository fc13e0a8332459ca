"""KV keys scoped by the bot's id (``STATE_KEYS_BY_BOT``, seed 004: ``session:<bot>:<chat>:<user>``)
and the move of the unscoped format's keys to it (``state.scoping``), on every backend.

Two bots with the same chats, users and update ids write the same key names into one storage
and never see each other's values, counters or done-markers; a store without a bot (the
format before) sees neither. The move renames each key, merges it with what traffic already
wrote under the new name (counters added, done-markers kept, the longer TTL), can run twice,
and turns the done-marker fallback off when it has finished.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings

from telegram_bot.state import Increment, KVStore, Put, open_store, override_store, scoping_bot
from telegram_bot.state.memory import MemoryStore
from telegram_bot.state.scoping import move_keys, scoped_bots, settle, unscoped_name
from tests.conftest import KV_BACKENDS, REDIS_URL, SKIPPED_BACKENDS

BOT_A, BOT_B = 7_000_000_001, 7_000_000_002
DONE = {"s": "done"}
COUNTER = "stats:messages:-100123:2026-12-07:42"
HOUR = 3_600_000

Opener = Callable[[int | None], KVStore]


@pytest.fixture(params=KV_BACKENDS)
def storage(request: pytest.FixtureRequest) -> Iterator[Opener]:
    """Opens stores, each for a bot (or None: unscoped), that share one storage."""
    backend = request.param
    opened: list[KVStore] = []
    prefix = f"t{uuid.uuid4().hex[:12]}:"
    if backend == "redis" and not REDIS_URL:
        SKIPPED_BACKENDS.add("redis")
        pytest.skip("Redis backend: REDIS_URL not set")
    first: MemoryStore | None = None

    def open_one(bot: int | None) -> KVStore:
        nonlocal first
        if backend == "memory":
            store = MemoryStore(bot=bot)
            if first is None:
                first = store
            else:  # one dict for every bot: what one Redis is for several processes
                store._data, store._sorted, store._lock = first._data, first._sorted, first._lock
        elif backend == "db":
            store = open_store("db://", bot=bot)
        else:
            store = open_store(REDIS_URL, prefix=prefix, bot=bot)
        opened.append(store)
        return store

    yield open_one
    if backend == "redis":
        client = opened[0].client  # type: ignore[attr-defined]
        for key in client.scan_iter(match=f"{prefix}*", count=500):
            client.delete(key)
    for store in opened:
        store.close()


@pytest.fixture(autouse=True)
def _database_for_the_db_backend(request: pytest.FixtureRequest) -> None:
    if (
        getattr(request.node, "callspec", None)
        and request.node.callspec.params.get("storage") == "db"
    ):
        request.getfixturevalue("transactional_db")


def unscoped_left(store: KVStore) -> list[str]:
    bots = scoped_bots(store)
    return [key for key in store.raw_keys() if unscoped_name(store, key, bots) is not None]


def test_two_bots_in_one_storage_do_not_see_each_others_keys(storage: Opener) -> None:
    a, b, old = storage(BOT_A), storage(BOT_B), storage(None)
    for _ in range(3):
        a.increment(COUNTER)
    b.increment(COUNTER, 2)
    a.set("session:-100123:42", {"v": 1, "d": "a's"})
    assert b.get("session:-100123:42") is None
    b.set("session:-100123:42", {"v": 1, "d": "b's"})
    assert a.get_many([COUNTER, "session:-100123:42"]) == [3, {"v": 1, "d": "a's"}]
    assert b.get_many([COUNTER, "session:-100123:42"]) == [2, {"v": 1, "d": "b's"}]
    assert old.get(COUNTER) is None  # the unscoped format is a third namespace
    # The same update id done by one bot is new to the other.
    assert a.apply_once("upd:55:stats.count", DONE, [Increment(COUNTER)])
    assert not a.apply_once("upd:55:stats.count", DONE, [Increment(COUNTER)])
    assert b.apply_once("upd:55:stats.count", DONE, [Increment(COUNTER)])
    finished = a.claim_or_finish(
        "upd:56",
        claim={"s": "claim"},
        claim_ttl_ms=HOUR,
        done=DONE,
        done_ttl_ms=HOUR,
        increments=[Increment(COUNTER)],
        triggers=[None],
        done_key="upd:d:0#56",
    )
    assert finished is not None and finished.values == [5]
    assert a.get("upd:d:0#56") == DONE and b.get("upd:d:0#56") is None
    assert (
        b.set_if_absent_and_increment("upd:56", {"s": "claim"}, HOUR, [], absent_key="upd:d:0#56")
        == []
    )
    # Indexed and scanned families list each bot's own keys, named as the callers name them.
    a.set("dlq:9", {"who": "a"})
    b.set("dlq:9", {"who": "b"})
    b.set("dlq:10", {"who": "b"})
    assert list(a.scan_all("dlq:")) == ["dlq:9"]
    assert sorted(b.scan_all("dlq:")) == ["dlq:10", "dlq:9"]
    assert list(a.scan_all("stats:")) == [COUNTER]
    assert a.get(COUNTER) == 5 and b.get(COUNTER) == 3
    assert list(a.scan_all("upd:d:0#")) == ["upd:d:0#56"]
    # Where the key is kept: the bot's id after the family, the key's own name after it.
    assert a.raw_name(COUNTER) == f"{a.prefix}stats:{BOT_A}:messages:-100123:2026-12-07:42"
    assert a.raw_exists(a.raw_name(COUNTER)) and not old.raw_exists(old.raw_name("dlq:10"))


def test_a_scan_pages_through_one_bots_keys_only(storage: Opener) -> None:
    a, b = storage(BOT_A), storage(BOT_B)
    for i in range(25):
        a.set(f"lang:{i}", "en")
        b.set(f"lang:{i}", "ru")
    pages, cursor, seen = 0, None, []
    while True:
        page, cursor = a.scan("lang:", cursor, 7)
        seen += page
        pages += 1
        if cursor is None:
            break
    assert sorted(set(seen)) == sorted(f"lang:{i}" for i in range(25))
    assert a.get_many(seen[:3]) == ["en"] * 3


def write_before_the_upgrade(old: KVStore) -> None:
    """What a deployment of the format before holds: counters, done-markers (packed and not),
    a unit marker, a session, a dead letter."""
    old.increment(COUNTER, 4, ttl_ms=HOUR)
    old.set("upd:d:1#10", DONE, HOUR)
    old.set("upd:d:1#11", DONE, HOUR)
    old.set("upd:120", DONE, HOUR)  # the legacy layout's done-marker
    old.set("upd:130:stats.count", DONE, HOUR)
    old.set("session:-100123:42", {"v": 1, "d": "old"})
    old.set("dlq:7", {"update": 7}, 2 * HOUR)


def test_the_move_renames_merges_and_can_run_again(storage: Opener) -> None:
    old = storage(None)
    write_before_the_upgrade(old)
    new = storage(BOT_A)
    assert new.reads_unscoped()
    # Before the move: an update done before the upgrade is done after it.
    assert new.get("upd:d:1#10") == DONE and new.get("upd:120") == DONE
    assert new.claim_or_finish(
        "upd:110", claim={"s": "claim"}, claim_ttl_ms=HOUR, done=DONE, done_ttl_ms=HOUR,
        done_key="upd:d:1#10",
    ) is None  # fmt: skip
    assert (
        new.set_if_absent_and_increment("upd:120", {"s": "claim"}, HOUR, [Increment(COUNTER)])
        is None
    )
    assert not new.apply_once("upd:130:stats.count", DONE, [Increment(COUNTER)])
    assert new.get(COUNTER) is None  # nothing counted by the refused steps
    new.set("upd:d:1#13", DONE, HOUR)
    old.set("upd:d:1#13", DONE, HOUR)
    new.delete("upd:d:1#13")  # forgotten (idempotency.forget): at both places
    assert new.get("upd:d:1#13") is None and old.get("upd:d:1#13") is None
    # Traffic under the new names before the move reaches them.
    new.increment(COUNTER, 3)
    new.set("upd:d:1#12", DONE, 3 * HOUR)
    new.set("session:-100123:42", {"v": 1, "d": "new"})
    dry = move_keys(new, dry_run=True)
    assert sum(dry.renamed.values()) + sum(dry.merged.values()) >= 5
    assert dry.merged["stats"] == 1 and not dry.finished and new.reads_unscoped()
    assert old.get(COUNTER) == 4  # the dry run moved nothing

    report = move_keys(new)
    assert report.finished and report.renamed["dlq"] == 1 and report.merged["stats"] == 1
    assert unscoped_left(new) == []
    assert old.get(COUNTER) is None and old.get("upd:120") is None
    assert new.get(COUNTER) == 7  # 4 before + 3 after: summed
    assert new.get_many(["upd:d:1#10", "upd:d:1#11", "upd:d:1#12", "upd:120"]) == [DONE] * 4
    assert new.get("upd:130:stats.count") == DONE
    assert new.get("session:-100123:42") == {"v": 1, "d": "new"}  # the newer value kept
    assert list(new.scan_all("dlq:")) == ["dlq:7"]
    assert not new.reads_unscoped()
    # Run again: nothing to move, nothing changed.
    again = move_keys(new)
    assert again.finished and again.moved == 0 and new.get(COUNTER) == 7
    # A process that opens the store later sees the flag and never reads the old names.
    assert not storage(BOT_A).reads_unscoped()


def test_the_move_keeps_the_longer_ttl_and_a_done_marker_over_a_claim(storage: Opener) -> None:
    old = storage(None)
    old.increment("counter:x", 2, ttl_ms=50 * HOUR)
    old.set("upd:9", DONE, HOUR)
    new = storage(BOT_A)
    new.increment("counter:x", 1, ttl_ms=1000)
    new.set("upd:9", {"s": "claim"}, 1000)  # as no product writes it: the merge still keeps DONE
    move_keys(new)
    import time

    time.sleep(1.2)
    assert new.get("counter:x") == 3  # the longer TTL: 50 h, not 1 s
    assert new.get("upd:9") == DONE


def test_the_move_leaves_another_bots_keys_alone(storage: Opener) -> None:
    b = storage(BOT_B)
    b.increment(COUNTER, 5)
    b.set("upd:d:3#1", DONE, HOUR)
    settle(b)  # what the process-wide store does at its first opening: registers its bot
    old = storage(None)
    old.increment(COUNTER, 4)
    a = storage(BOT_A)
    report = move_keys(a)
    assert report.finished and report.moved == 1
    assert a.get(COUNTER) == 4 and b.get(COUNTER) == 5 and b.get("upd:d:3#1") == DONE


def test_a_new_deployment_starts_without_the_fallback(storage: Opener) -> None:
    fresh = storage(BOT_A)
    settle(fresh)
    assert not fresh.reads_unscoped()
    old = storage(None)
    old.set("lang:5", "en")
    upgraded = storage(BOT_B)
    settle(upgraded)
    assert upgraded.reads_unscoped()  # an unscoped key is there: the move must run


@pytest.mark.django_db
def test_the_command_moves_the_process_wide_store_and_says_so() -> None:
    old = open_store("memory://")
    old.increment(COUNTER, 2)
    new = MemoryStore(bot=scoping_bot())
    new._data, new._sorted, new._lock = old._data, old._sorted, old._lock  # type: ignore[attr-defined]
    with override_store(new):
        out = StringIO()
        call_command("move_state_keys", "--dry-run", stdout=out)
        assert "stats: 1 to rename, 0 to merge" in out.getvalue()
        assert old.get(COUNTER) == 2
        call_command("move_state_keys", stdout=out)
        assert "Finished" in out.getvalue() and new.get(COUNTER) == 2 and old.get(COUNTER) is None
        with override_settings(STATE_KEYS_BY_BOT=False), pytest.raises(CommandError, match="off"):
            call_command("move_state_keys")
        with pytest.raises(CommandError, match="--page"):
            call_command("move_state_keys", "--page", "0")


def test_a_bot_id_is_a_positive_integer() -> None:
    from telegram_bot.state import InvalidValueError

    for bad in (0, -5, "12", True):
        with pytest.raises(InvalidValueError):
            MemoryStore(bot=bad)  # type: ignore[arg-type]


def test_the_process_wide_store_is_scoped_by_the_tokens_bot_id(settings: object) -> None:
    assert scoping_bot() == 123456789  # config/settings_test.py's token
    with override_settings(STATE_KEYS_BY_BOT=False):
        assert scoping_bot() is None
    with override_settings(TELEGRAM_BOT_TOKEN=""):
        assert scoping_bot() is None


def test_put_ops_land_in_the_bots_namespace(storage: Opener) -> None:
    a, b = storage(BOT_A), storage(BOT_B)
    assert a.apply_once("upd:1:x", DONE, [Put("lang:1", "en"), Increment("counter:n", 2)])
    assert a.get_many(["lang:1", "counter:n"]) == ["en", 2]
    assert b.get_many(["lang:1", "counter:n"]) == [None, None]
