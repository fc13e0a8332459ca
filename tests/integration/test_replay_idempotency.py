"""Replaying a dead letter never applies an update's committed KV effects twice."""

from __future__ import annotations

from typing import Any

import pytest

from telegram_bot import pipeline
from telegram_bot.pipeline import Outcome, process_update
from telegram_bot.router import Route, Router
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
