"""Replaying a dead letter never applies an update's committed KV effects twice."""

from __future__ import annotations

from typing import Any

import pytest

from telegram_bot.pipeline import process as pipeline
from telegram_bot.pipeline.process import Outcome, process_update
from telegram_bot.pipeline.router import Route, Router
from telegram_bot.state import Increment, KVStore
from tests.builders import make_message_update
from tests.fakes.telegram import FakeTelegramServer

behaviour = {"raise_after_commit": False, "raise_before_commit": False}


def counting_handler(ctx: Any) -> None:
    if behaviour["raise_before_commit"]:
        raise RuntimeError("failed before committing")
    ctx.commit_once([Increment("counter:replayed")])
    if behaviour["raise_after_commit"]:
        raise RuntimeError("failed after committing")


@pytest.fixture
def counting_router(monkeypatch: pytest.MonkeyPatch) -> None:
    router = Router([Route.on_command("count", counting_handler)])
    monkeypatch.setattr(pipeline, "get_router", lambda: router)
    behaviour.update(raise_after_commit=False, raise_before_commit=False)


def test_a_replay_after_the_handler_committed_counts_nothing_twice(
    bot: FakeTelegramServer, memory_store: KVStore, counting_router: None
) -> None:
    update = make_message_update("/count", chat_id=5, user_id=5)
    behaviour["raise_after_commit"] = True
    assert process_update(update) == Outcome.DEAD_LETTER
    assert process_update(update) == Outcome.DUPLICATE  # Telegram re-sends it
    behaviour["raise_after_commit"] = False
    assert process_update(update, replay=True) == Outcome.PROCESSED
    assert memory_store.get("counter:replayed") == 1


def test_a_replay_of_a_handler_that_failed_before_committing_commits_once(
    bot: FakeTelegramServer, memory_store: KVStore, counting_router: None
) -> None:
    update = make_message_update("/count", chat_id=5, user_id=5)
    behaviour["raise_before_commit"] = True
    assert process_update(update) == Outcome.DEAD_LETTER
    assert process_update(update) == Outcome.DUPLICATE
    assert memory_store.get("counter:replayed") is None
    behaviour["raise_before_commit"] = False
    assert process_update(update, replay=True) == Outcome.PROCESSED
    assert process_update(update, replay=True) == Outcome.PROCESSED
    assert memory_store.get("counter:replayed") == 1


def test_a_handler_that_marked_the_update_done_costs_no_second_marker_write(
    bot: FakeTelegramServer,
    memory_store: KVStore,
    counting_router: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    writes: list[str] = []
    real_set = memory_store.set

    def counting_set(key: str, value: Any, ttl_ms: int | None = None) -> None:
        writes.append(key)
        real_set(key, value, ttl_ms)

    monkeypatch.setattr(memory_store, "set", counting_set)
    update = make_message_update("/count", chat_id=5, user_id=5)
    assert process_update(update) == Outcome.PROCESSED
    assert [key for key in writes if key.startswith("upd:")] == []
    assert memory_store.get(f"upd:{update['update_id']}") == {"s": "done"}
    assert process_update(update) == Outcome.DUPLICATE


def test_a_replay_already_in_progress_is_not_run_twice(
    bot: FakeTelegramServer, memory_store: KVStore, counting_router: None
) -> None:
    update = make_message_update("/count", chat_id=5, user_id=5)
    behaviour["raise_before_commit"] = True
    assert process_update(update) == Outcome.DEAD_LETTER
    behaviour["raise_before_commit"] = False
    memory_store.set(f"upd:{update['update_id']}", {"s": "claim", "o": "other replay"}, 60_000)
    assert process_update(update, replay=True) == Outcome.IN_PROGRESS
    assert memory_store.get("counter:replayed") is None
