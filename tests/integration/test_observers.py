"""Observers: several features see one update, each exactly once, isolated from each other."""

from __future__ import annotations

import multiprocessing
import time
from typing import Any

import pytest
from django.db import connection

from telegram_bot.pipeline import process as pipeline
from telegram_bot.pipeline.process import Outcome, process_update
from telegram_bot.pipeline.router import Observer, Route, Router
from telegram_bot.state import Increment, KVStore, override_store
from tests.builders import make_message_update
from tests.fakes.telegram import FakeTelegramServer

seen: list[str] = []
broken = {"first": False}


def first(ctx: Any) -> None:
    seen.append("first")
    if broken["first"]:
        raise RuntimeError("the first observer is broken")
    ctx.commit_once([Increment("counter:first")])


def second(ctx: Any) -> None:
    seen.append("second")
    ctx.commit_once([Increment("counter:second")])


def watcher(ctx: Any) -> None:
    seen.append("watcher")  # commits nothing: runs again on a re-delivery


def answer(ctx: Any) -> None:
    seen.append("route")
    ctx.reply("answered")


@pytest.fixture
def observed(monkeypatch: pytest.MonkeyPatch) -> Router:
    router = Router(
        [Route.on_command("ask", answer)],
        observers=[
            Observer.on("t.second", "message", second, order=200),
            Observer.on("t.first", "message", first, order=100),
            Observer.on("t.watcher", "message", watcher, order=150, chat_types=("supergroup",)),
        ],
    )
    monkeypatch.setattr(pipeline, "get_router", lambda: router)
    seen.clear()
    broken["first"] = False
    return router


def test_observers_run_in_order_then_the_routed_handler(
    bot: FakeTelegramServer, memory_store: KVStore, observed: Router
) -> None:
    update = make_message_update("/ask", chat_id=-100, user_id=5)
    assert process_update(update) == Outcome.PROCESSED
    assert seen == ["first", "watcher", "second", "route"]
    assert (memory_store.get("counter:first"), memory_store.get("counter:second")) == (1, 1)
    assert [call.params["text"] for call in bot.calls_to("sendMessage")] == ["answered"]
    assert process_update(update) == Outcome.DUPLICATE
    assert observed.allowed_updates == ["message"]


def test_the_chat_types_of_an_observer_are_respected(
    bot: FakeTelegramServer, memory_store: KVStore, observed: Router
) -> None:
    process_update(make_message_update("hello", chat_id=7, user_id=7))
    assert seen == ["first", "second"]  # no watcher in a private chat, and no route


def test_the_last_committing_unit_marks_the_update_done_in_its_own_commit(
    bot: FakeTelegramServer, memory_store: KVStore, observed: Router
) -> None:
    update = make_message_update("plain text", chat_id=-100, user_id=5)
    writes: list[str] = []
    real_set = memory_store.set

    def counting_set(key: str, *args: Any, **kwargs: Any) -> Any:
        if key.startswith("upd:"):
            writes.append(key)
        return real_set(key, *args, **kwargs)

    memory_store.set = counting_set  # type: ignore[method-assign]
    assert process_update(update) == Outcome.PROCESSED
    assert writes == []  # the claim is set_if_absent; the done-marker came with "second"
    assert memory_store.get(f"upd:{update['update_id']}") == {"s": "done"}


def test_a_failing_observer_loses_nothing_of_the_others_and_its_replay_runs_only_it(
    bot: FakeTelegramServer, memory_store: KVStore, observed: Router
) -> None:
    update = make_message_update("/ask", chat_id=-100, user_id=5)
    broken["first"] = True
    assert process_update(update) == Outcome.DEAD_LETTER
    assert seen == ["first", "watcher", "second", "route"]  # the others still ran
    assert memory_store.get("counter:second") == 1
    assert len(bot.calls_to("sendMessage")) == 1
    assert process_update(update) == Outcome.DUPLICATE  # Telegram's re-delivery
    broken["first"] = False
    seen.clear()
    assert process_update(update, replay=True) == Outcome.PROCESSED
    assert seen == ["first"]  # the units that had finished are not run again
    assert (memory_store.get("counter:first"), memory_store.get("counter:second")) == (1, 1)
    assert len(bot.calls_to("sendMessage")) == 1
    seen.clear()
    assert process_update(update, replay=True) == Outcome.PROCESSED
    assert seen == []
    assert memory_store.get("counter:first") == 1


def test_a_redelivery_after_a_crash_between_observers_commits_each_once(
    bot: FakeTelegramServer, memory_store: KVStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In-process variant: the claim is released as a crash would leave it (expired)."""
    update = make_message_update("hello", chat_id=-100, user_id=5)
    key = f"upd:{update['update_id']}"
    calls = {"n": 0}

    def die_after_first(ctx: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 1:
            raise KeyboardInterrupt  # the worker stops between the two observers
        second(ctx)

    router = Router(
        [],
        observers=[
            Observer.on("t.first", "message", first, order=100),
            Observer.on("t.second", "message", die_after_first, order=200),
        ],
    )
    monkeypatch.setattr(pipeline, "get_router", lambda: router)
    with pytest.raises(KeyboardInterrupt):
        process_update(update)
    assert memory_store.get("counter:first") == 1
    memory_store.delete(key)  # the dead worker's claim expires
    assert process_update(update) == Outcome.PROCESSED
    assert (memory_store.get("counter:first"), memory_store.get("counter:second")) == (1, 1)


def test_a_worker_killed_between_two_observers_loses_and_doubles_nothing(
    bot: FakeTelegramServer, shared_kv: KVStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real process, SIGKILLed after the first observer's commit; Telegram re-delivers."""
    from tests.contract.race_worker import observe_and_die

    update = make_message_update("hello", chat_id=-100, user_id=5)
    db_name = connection.settings_dict["NAME"] if shared_kv.url.startswith("db://") else None
    ctx = multiprocessing.get_context("spawn")
    child = ctx.Process(
        target=observe_and_die, args=(shared_kv.url, shared_kv.prefix, db_name, update)
    )
    child.start()
    child.join(timeout=120)
    assert child.exitcode == -9
    assert shared_kv.get("counter:first") == 1
    assert shared_kv.get("counter:second") is None
    router = Router(
        [],
        observers=[
            Observer.on("t.first", "message", first, order=100),
            Observer.on("t.second", "message", second, order=200),
        ],
    )
    monkeypatch.setattr(pipeline, "get_router", lambda: router)
    with override_store(shared_kv):
        deadline = time.monotonic() + 30
        outcome = process_update(update)
        while outcome == Outcome.IN_PROGRESS and time.monotonic() < deadline:
            time.sleep(0.2)  # the dead worker's claim has not expired yet
            outcome = process_update(update)
        assert outcome == Outcome.PROCESSED
        assert process_update(update) == Outcome.DUPLICATE
    assert (shared_kv.get("counter:first"), shared_kv.get("counter:second")) == (1, 1)


def test_statistics_count_a_group_message_that_another_feature_handles(
    bot: FakeTelegramServer, memory_store: KVStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from stats.handlers import OBSERVERS as STATS_OBSERVERS

    router = Router(
        [Route.on_update("message", watcher, chat_types=("supergroup",))],
        observers=[Observer.on("t.first", "message", first, order=100), *STATS_OBSERVERS],
    )
    monkeypatch.setattr(pipeline, "get_router", lambda: router)
    update = make_message_update("two words", chat_id=-100, user_id=5)
    assert process_update(update) == Outcome.PROCESSED
    assert seen[-1] == "watcher"
    assert [key for key in memory_store.scan_all("stats:words:")] != []


def test_observer_names_are_checked_and_unique() -> None:
    with pytest.raises(ValueError, match="observer name"):
        Observer.on("Bad Name", "message", first)
    with pytest.raises(ValueError, match="observer name"):
        Observer.on("route", "message", first)
    with pytest.raises(ValueError, match="unique"):
        Router(
            [], observers=[Observer.on("a", "message", first), Observer.on("a", "message", second)]
        )


# --- review findings: replay after the done-marker's lifetime, failed updates, claims -------
def test_a_replay_after_the_done_markers_lifetime_repeats_nothing(
    bot: FakeTelegramServer,
    memory_store: KVStore,
    observed: Router,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Letters are kept longer than done-markers: what ran is remembered as long as the letter."""
    from telegram_bot.pipeline import idempotency

    monkeypatch.setattr(idempotency, "done_ttl_ms", lambda: 200)  # done-markers die fast
    update = make_message_update("/ask", chat_id=-100, user_id=5)
    broken["first"] = True
    assert process_update(update) == Outcome.DEAD_LETTER
    time.sleep(0.3)  # every 200 ms marker is gone; the letter (7 days) is not
    broken["first"] = False
    seen.clear()
    assert process_update(update, replay=True) == Outcome.PROCESSED
    assert seen == ["first"]
    assert (memory_store.get("counter:first"), memory_store.get("counter:second")) == (1, 1)
    assert len(bot.calls_to("sendMessage")) == 1


def test_an_update_with_a_failed_unit_is_never_marked_done_by_a_later_commit(
    bot: FakeTelegramServer,
    memory_store: KVStore,
    observed: Router,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The last unit commits after an earlier one failed: if the letter cannot be written
    (the KV store went away), Telegram's re-delivery must run the failed unit, not be told
    "duplicate"."""
    from telegram_bot.errors import StateUnavailableError

    update = make_message_update("plain text", chat_id=-100, user_id=5)
    broken["first"] = True

    def unavailable(*args: Any, **kwargs: Any) -> None:
        raise StateUnavailableError("the KV store went away")

    monkeypatch.setattr(pipeline.DeadLetterStore, "put", unavailable)
    assert process_update(update) == Outcome.UNAVAILABLE
    assert memory_store.get(f"upd:{update['update_id']}") != {"s": "done"}
    monkeypatch.undo()
    monkeypatch.setattr(pipeline, "get_router", lambda: observed)
    broken["first"] = False
    seen.clear()
    time.sleep(0.05)  # the released claim's 1 ms TTL; Telegram comes back seconds later
    assert process_update(update) == Outcome.PROCESSED  # not "duplicate"
    assert seen == ["first", "watcher", "second"]
    assert (memory_store.get("counter:first"), memory_store.get("counter:second")) == (1, 1)


def test_a_replay_claims_the_update_even_when_it_is_marked_done(
    bot: FakeTelegramServer, memory_store: KVStore, observed: Router
) -> None:
    update = make_message_update("/ask", chat_id=-100, user_id=5)
    key = f"upd:{update['update_id']}"
    memory_store.set(key, {"s": "done"}, ttl_ms=60_000)
    markers: list[Any] = []
    real_first = observed.observers[0].handler

    def peek(ctx: Any) -> None:
        markers.append(ctx.store.get(key))
        real_first(ctx)

    object.__setattr__(observed.observers[0], "handler", peek)
    try:
        memory_store.set(f"upd:{update['update_id']}:t.second", {"s": "done"}, ttl_ms=60_000)
        assert process_update(update, replay=True) == Outcome.PROCESSED
    finally:
        object.__setattr__(observed.observers[0], "handler", real_first)
    assert markers and markers[0]["s"] == "claim"  # a second replay would get IN_PROGRESS
    assert memory_store.get(key) == {"s": "done"}
    assert memory_store.get("counter:second") is None  # its marker said it had run


def test_a_letter_from_before_unit_markers_is_not_applied_again(
    bot: FakeTelegramServer, memory_store: KVStore, observed: Router
) -> None:
    update = make_message_update("/ask", chat_id=-100, user_id=5)
    memory_store.set(f"upd:{update['update_id']}", {"s": "done"}, ttl_ms=60_000)
    assert process_update(update, replay=True) == Outcome.PROCESSED
    assert seen == []  # its handler had committed under the old single marker
    assert bot.calls_to("sendMessage") == []


def test_a_last_unit_that_had_committed_before_still_gets_the_update_marked_done(
    bot: FakeTelegramServer, memory_store: KVStore, observed: Router
) -> None:
    update = make_message_update("plain text", chat_id=-100, user_id=5)
    memory_store.set(f"upd:{update['update_id']}:t.second", {"s": "done"}, ttl_ms=60_000)
    assert process_update(update) == Outcome.PROCESSED
    assert memory_store.get(f"upd:{update['update_id']}") == {"s": "done"}
    assert memory_store.get("counter:second") is None
