"""The update path's one step: an update whose every observer is foreseen is done in one KV
call (``KVStore.claim_or_finish``): the claim counters, the one commit and the done-marker;
anything the foresight cannot promise goes the ordinary way, and nothing is lost or doubled.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connections, transaction

from telegram_bot.pipeline import idempotency
from telegram_bot.pipeline import process as pipeline
from telegram_bot.pipeline.process import Outcome, dead_letters, process_update
from telegram_bot.pipeline.router import QUIET, CommitOnce, Foresight, Observer, Route, Router
from telegram_bot.state import Increment, KVStore, override_store
from telegram_bot.state.base import Op
from telegram_bot.updates import Update
from tests.builders import make_message_update
from tests.fakes.telegram import FakeTelegramServer

GROUP = -100
ran: list[str] = []
knobs: dict[str, Any] = {}


def counter_of(update: Update) -> list[tuple[str, int | None]]:
    return [(f"counter:window:{update.user_id}", None)]


def count_ops(update: Update) -> list[Op]:
    return [Increment(f"counter:messages:{update.user_id}")]


def limiter(ctx: Any) -> None:
    ran.append(f"limiter {ctx.counted}")
    if ctx.counted is not None and ctx.counted[0] == knobs.get("acts_at", 3):
        ctx.reply("slow down")


def foresee_limiter(update: Update, store: KVStore) -> Foresight | None:
    if knobs.get("limiter_raises"):
        raise RuntimeError("the foresight is broken")
    return Foresight(counters=tuple(counter_of(update)), acts_at=(knobs.get("acts_at", 3),))


def counting(ctx: Any) -> None:
    ran.append("counting")
    if knobs.get("handler_raises"):
        raise RuntimeError("the handler is broken")
    ctx.commit_once(count_ops(ctx.update))


def foresee_counting(update: Update, store: KVStore) -> Foresight | None:
    if knobs.get("counting_unknown"):
        return None

    def work(commit: CommitOnce) -> None:
        if knobs.get("in_a_transaction"):  # as statistics do: rolled back unless applied
            with transaction.atomic():
                applied = commit(count_ops(update))
                transaction.set_rollback(not applied)
        else:
            applied = commit(count_ops(update))
        ran.append(f"one step applied={applied}")
        if applied and knobs.get("raise_after_commit"):
            raise RuntimeError("broken after its commit")

    return Foresight(commit=work)


def quiet(ctx: Any) -> None:
    ran.append("quiet")


def foresee_quiet(update: Update, store: KVStore) -> Foresight | None:
    return QUIET


def answer(ctx: Any) -> None:
    ran.append("route")


def observers(*extra: Observer) -> list[Observer]:
    return [
        Observer.on("t.limit", "message", limiter, order=100, foresee=foresee_limiter),
        Observer.on("t.quiet", "message", quiet, order=150, foresee=foresee_quiet),
        Observer.on("t.count", "message", counting, order=900, foresee=foresee_counting),
        *extra,
    ]


@pytest.fixture
def router(monkeypatch: pytest.MonkeyPatch) -> Router:
    built = Router([Route.on_command("ask", answer)], observers=observers())
    monkeypatch.setattr(pipeline, "get_router", lambda: built)
    ran.clear()
    knobs.clear()
    return built


class Calls:
    """The store's public calls, by name (what went to the KV store, and how many times)."""

    def __init__(self, store: KVStore) -> None:
        self.store, self.names = store, []

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.store, name)
        if callable(attribute) and not name.startswith("_"):

            def call(*args: Any, **kwargs: Any) -> Any:
                self.names.append(name)
                return attribute(*args, **kwargs)

            return call
        return attribute


def writes(calls: Calls) -> list[str]:
    return [name for name in calls.names if name not in ("get", "get_many")]


def message(text: str = "hello", *, user_id: int = 5, update_id: int | None = None) -> dict:
    update = make_message_update(text, chat_id=GROUP, user_id=user_id)
    if update_id is not None:
        update["update_id"] = update_id
    return update


def test_a_foreseen_update_is_done_in_one_kv_call(
    bot: FakeTelegramServer, memory_store: KVStore, router: Router
) -> None:
    calls = Calls(memory_store)
    update = message()
    with override_store(calls):  # type: ignore[arg-type]
        assert process_update(update) == Outcome.PROCESSED
    assert ran == ["one step applied=True"]  # no handler ran: each said what it would do
    assert [n for n in writes(calls) if n != "set"] == ["claim_or_finish"]  # "set": liveness
    upd = update["update_id"]
    assert idempotency.read_marker(memory_store, upd) == {"s": "done"}
    assert memory_store.get(f"upd:d:{upd // 100}#{upd % 100}") == {"s": "done"}  # its group
    assert memory_store.get(f"upd:{upd}") is None  # no claim was written
    assert memory_store.get(f"upd:{upd}:t.count") is None  # the done-marker says as much
    assert memory_store.get("counter:messages:5") == 1
    assert memory_store.get("counter:window:5") == 1
    ran.clear()
    assert process_update(update) == Outcome.DUPLICATE  # Telegram's re-delivery
    assert memory_store.get("counter:messages:5") == 1
    assert memory_store.get("counter:window:5") == 1
    assert ran == ["one step applied=False"]  # found done: the ordinary path says duplicate


def test_a_counter_that_meets_its_trigger_claims_and_the_units_run_with_its_value(
    bot: FakeTelegramServer, memory_store: KVStore, router: Router
) -> None:
    for _ in range(2):
        assert process_update(message()) == Outcome.PROCESSED
    ran.clear()
    assert process_update(message()) == Outcome.PROCESSED  # the third: the limiter acts
    assert ran == ["one step applied=False", "limiter (3,)", "quiet", "counting"]
    assert [call.params["text"] for call in bot.calls_to("sendMessage")] == ["slow down"]
    assert memory_store.get("counter:window:5") == 3  # taken once, with the claim
    assert memory_store.get("counter:messages:5") == 3  # counted once, by the handler
    ran.clear()
    assert process_update(message()) == Outcome.PROCESSED  # past it: one step again
    assert ran == ["one step applied=True"]
    assert memory_store.get("counter:window:5") == 4


def test_a_claim_rolled_back_with_the_observers_transaction_is_made_again(
    bot: FakeTelegramServer, kv: KVStore, router: Router
) -> None:
    """With the database KV store the one step joins the transaction statistics roll back
    when their commit did not apply: a claim left at a trigger went with it, and the update
    is claimed again the ordinary way, its counter taken once, never lost."""
    knobs["in_a_transaction"] = True
    with override_store(kv):
        for _ in range(2):
            assert process_update(message()) == Outcome.PROCESSED
        ran.clear()
        update = message()
        assert process_update(update) == Outcome.PROCESSED
        assert ran == ["one step applied=False", "limiter (3,)", "quiet", "counting"]
        assert [call.params["text"] for call in bot.calls_to("sendMessage")] == ["slow down"]
        assert kv.get("counter:window:5") == 3 and kv.get("counter:messages:5") == 3
        assert kv.get(f"upd:{update['update_id']}") == {"s": "done"}


@pytest.mark.parametrize(
    "knob",
    ["counting_unknown", "an observer without foresight", "two commits"],
)
def test_what_is_not_foreseen_runs_the_ordinary_way_once(
    bot: FakeTelegramServer,
    memory_store: KVStore,
    router: Router,
    monkeypatch: pytest.MonkeyPatch,
    knob: str,
) -> None:
    expected = ["limiter (1,)", "quiet", "counting"]
    if knob == "an observer without foresight":
        extra = Observer.on("t.plain", "message", quiet, order=950)
        built = Router(router.routes, observers=observers(extra))
        monkeypatch.setattr(pipeline, "get_router", lambda: built)
        expected.append("quiet")
    elif knob == "two commits":
        extra = Observer.on("t.again", "message", counting, order=950, foresee=foresee_counting)
        built = Router(router.routes, observers=observers(extra))
        monkeypatch.setattr(pipeline, "get_router", lambda: built)
        expected.append("counting")
    else:
        knobs[knob] = True
    update = message()
    assert process_update(update) == Outcome.PROCESSED
    assert ran == expected
    assert memory_store.get("counter:window:5") == 1
    assert memory_store.get("counter:messages:5") == (2 if knob == "two commits" else 1)
    assert memory_store.get(f"upd:{update['update_id']}") == {"s": "done"}
    assert process_update(update) == Outcome.DUPLICATE


@pytest.mark.parametrize(
    "update",
    [
        make_message_update("/ask", chat_id=GROUP, user_id=5),  # a routed command
        make_message_update("hello", chat_id=5, user_id=5),  # a private message
    ],
    ids=["command", "private"],
)
def test_a_command_or_a_private_message_runs_the_ordinary_way(
    bot: FakeTelegramServer, memory_store: KVStore, router: Router, update: dict
) -> None:
    assert process_update(update) == Outcome.PROCESSED
    assert "counting" in ran and not any(step.startswith("one step") for step in ran)


def test_a_chat_that_is_not_allowed_counts_nothing(
    bot: FakeTelegramServer, memory_store: KVStore, router: Router, settings: Any
) -> None:
    settings.ALLOWED_CHAT_IDS = [GROUP - 1]
    assert process_update(message()) == Outcome.IGNORED
    assert ran == [] and memory_store.get("counter:messages:5") is None


def test_a_declaration_that_raises_is_its_observers_failure_the_others_run_once(
    bot: FakeTelegramServer, memory_store: KVStore, router: Router
) -> None:
    """The declaration is the observer's own logic, written once: when it raises, that
    observer failed (the update is a dead letter), the others ran once, and the replay runs
    only the failed one, counting its counter once."""
    knobs["limiter_raises"] = True
    update = message()
    assert process_update(update) == Outcome.DEAD_LETTER
    assert ran == ["quiet", "counting"]
    assert memory_store.get("counter:messages:5") == 1
    assert memory_store.get("counter:window:5") is None
    knobs.clear()
    ran.clear()
    assert process_update(update, replay=True) == Outcome.PROCESSED
    assert ran == ["limiter (1,)"]
    assert memory_store.get("counter:messages:5") == 1
    assert memory_store.get("counter:window:5") == 1


def test_a_handler_that_fails_when_not_foreseen_becomes_a_dead_letter(
    bot: FakeTelegramServer, memory_store: KVStore, router: Router
) -> None:
    knobs.update(limiter_raises=True, handler_raises=True)
    update = message()
    assert process_update(update) == Outcome.DEAD_LETTER
    assert memory_store.get("counter:messages:5") is None
    assert dead_letters().get(update["update_id"]) is not None


def test_work_that_raises_after_its_commit_is_a_dead_letter_whose_replay_repeats_nothing(
    bot: FakeTelegramServer, memory_store: KVStore, router: Router
) -> None:
    knobs["raise_after_commit"] = True
    update = message()
    assert process_update(update) == Outcome.DEAD_LETTER
    assert memory_store.get("counter:messages:5") == 1
    assert idempotency.read_marker(memory_store, update["update_id"]) == {"s": "done"}
    assert process_update(update) == Outcome.DUPLICATE
    knobs.clear()
    ran.clear()
    assert process_update(update, replay=True) == Outcome.PROCESSED
    assert ran == []  # every unit is done: none runs again, and nothing counts twice
    assert memory_store.get("counter:messages:5") == 1
    assert memory_store.get("counter:window:5") == 1


def test_a_unit_committed_before_is_not_applied_again(
    bot: FakeTelegramServer, memory_store: KVStore, router: Router
) -> None:
    """A letter's unit marker outlives the update's done-marker: the one step finds it."""
    update = message()
    memory_store.set(f"upd:{update['update_id']}:t.count", {"s": "done"})
    assert process_update(update) == Outcome.PROCESSED
    assert memory_store.get("counter:messages:5") is None
    assert memory_store.get(f"upd:{update['update_id']}") == {"s": "done"}


def test_threads_delivering_the_same_updates_count_each_once(
    bot: FakeTelegramServer, shared_kv: KVStore, router: Router
) -> None:
    updates = [message(user_id=5 + n % 3, update_id=9_000 + n) for n in range(30)]
    outcomes: list[Outcome] = []
    barrier = threading.Barrier(6)

    def deliver() -> None:
        try:
            barrier.wait()
            for update in updates:
                outcomes.append(process_update(update))
        finally:
            connections.close_all()

    with override_store(shared_kv):
        threads = [threading.Thread(target=deliver) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert outcomes.count(Outcome.PROCESSED) == 30
    assert set(outcomes) <= {Outcome.PROCESSED, Outcome.DUPLICATE, Outcome.IN_PROGRESS}
    assert [shared_kv.get(f"counter:messages:{5 + n}") for n in range(3)] == [10, 10, 10]
    assert [shared_kv.get(f"counter:window:{5 + n}") for n in range(3)] == [10, 10, 10]
