"""A claim names its process: a killed worker's claim is taken over within the liveness TTL,
never the claim of a live one (in-process checks on every backend, real processes on the
backends several processes share)."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import time
import uuid
from typing import Any

import pytest
from django.db import connection

from telegram_bot.errors import StateUnavailableError
from telegram_bot.pipeline import idempotency, liveness
from telegram_bot.pipeline.process import Outcome, _claim, process_update
from telegram_bot.state import KVStore, override_store
from tests.builders import make_message_update
from tests.conftest import wire_bot
from tests.fakes.telegram import FakeTelegramServer

LIVENESS_TTL = 3


def _db_name(store: KVStore) -> str | None:
    return connection.settings_dict["NAME"] if store.url.startswith("db://") else None


def _dead_claim() -> dict[str, Any]:
    """A claim of a process that never beat (as one killed long ago)."""
    return {"s": "claim", "o": "dead-worker", "p": uuid.uuid4().hex}


# --- in one process, every backend ---------------------------------------------------------------
def test_a_claim_names_this_process_and_its_liveness_key_is_there(kv: KVStore) -> None:
    claim = _claim(kv, 1, replay=False)
    assert isinstance(claim, dict)
    assert claim["p"] == liveness.current().process_id
    assert kv.get(f"live:{claim['p']}") == {"pid": os.getpid()}
    assert kv.get("upd:1") == claim


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_each_attempt_has_its_own_claim_and_a_forked_child_never_repeats_its_parents(
    memory_store: KVStore,
) -> None:
    first, second = idempotency.new_claim(memory_store), idempotency.new_claim(memory_store)
    assert first != second and first["p"] == second["p"]
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its first claim, with the counter it inherited
        os.write(write, json.dumps(idempotency.new_claim(memory_store)).encode())
        os._exit(0)
    os.waitpid(pid, 0)
    child = json.loads(os.read(read, 4096))
    ours = idempotency.new_claim(memory_store)
    assert child["o"] == ours["o"]  # the same attempt counter...
    assert child["p"] != ours["p"] and child != ours  # ...in another process: another claim


def test_a_claim_whose_process_is_gone_is_taken_over_at_once(kv: KVStore, settings: Any) -> None:
    settings.UPDATE_CLAIM_TTL_SECONDS = 3600
    dead = _dead_claim()
    kv.set("upd:2", dead, ttl_ms=3_600_000)
    claim = _claim(kv, 2, replay=False)
    assert isinstance(claim, dict)
    assert kv.get("upd:2") == claim
    assert _claim(kv, 2, replay=False) == Outcome.IN_PROGRESS  # ours now, and we are alive


def test_a_replay_takes_over_a_claim_whose_process_is_gone(kv: KVStore) -> None:
    kv.set("upd:3", _dead_claim(), ttl_ms=3_600_000)
    claim = _claim(kv, 3, replay=True)
    assert isinstance(claim, dict)
    assert kv.get("upd:3") == claim


def test_a_claim_given_up_a_moment_ago_is_taken_at_once(kv: KVStore) -> None:
    """A 503 gives the claim up with a marker that lives 1 ms; a re-delivery that comes within
    that millisecond (seen in CI on Python 3.13) was answered "in progress". Held here for a
    minute, so the test does not depend on the clock."""
    kv.set("upd:7", idempotency.RELEASED, ttl_ms=60_000)
    claim = _claim(kv, 7, replay=False)
    assert isinstance(claim, dict)
    assert kv.get("upd:7") == claim


def test_a_released_marker_that_expires_before_the_compare_and_set_is_absent(
    kv: KVStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The marker is read while it lives and is gone when the compare-and-set comes (its TTL
    is 1 ms): the claim is taken all the same."""
    real = kv.compare_and_set

    def expired_first(key: str, *args: Any, **kwargs: Any) -> bool:
        if key == "upd:9":
            kv.delete(key)
        return real(key, *args, **kwargs)

    kv.set("upd:9", idempotency.RELEASED, ttl_ms=60_000)
    monkeypatch.setattr(kv, "compare_and_set", expired_first)
    claim = _claim(kv, 9, replay=False)
    assert isinstance(claim, dict)
    assert kv.get("upd:9") == claim


def test_a_claim_of_a_live_process_or_without_a_process_is_never_taken(kv: KVStore) -> None:
    other = uuid.uuid4().hex
    kv.set(f"live:{other}", {"pid": 1}, ttl_ms=60_000)
    live = {"s": "claim", "o": "busy", "p": other}
    for update_id, held in [
        (4, live),
        (5, {"s": "claim", "o": "before liveness existed"}),
        (6, {"s": "claim", "o": "odd", "p": "not-a-process-id"}),
    ]:
        kv.set(f"upd:{update_id}", held, ttl_ms=60_000)
        assert _claim(kv, update_id, replay=False) == Outcome.IN_PROGRESS
        assert _claim(kv, update_id, replay=True) == Outcome.IN_PROGRESS
        assert kv.get(f"upd:{update_id}") == held


def test_the_heartbeat_keeps_the_key_while_claims_may_live_then_stops(
    kv: KVStore, settings: Any
) -> None:
    settings.UPDATE_LIVENESS_TTL_SECONDS = 0.6
    settings.UPDATE_CLAIM_TTL_SECONDS = 2
    process = liveness.Liveness()
    process_id = process.hold(kv)
    try:
        time.sleep(1.5)  # 2.5 liveness TTLs: only the heartbeat can have kept it
        assert liveness.alive(kv, process_id)
        time.sleep(2.5)  # past the claim TTL: no claim can need it, the beats stop
        assert not liveness.alive(kv, process_id)
        assert process._thread is None
        assert process.hold(kv) == process_id  # a new claim starts it again
        assert liveness.alive(kv, process_id)
    finally:
        process.stop()
    assert not liveness.alive(kv, process_id)


def test_an_owed_release_is_retried_until_the_store_answers(
    memory_store: KVStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A release that failed (the store did not answer) is done by the heartbeat once the
    store answers again; one whose claim is no longer there is dropped, the value left."""
    process = liveness.Liveness()
    claim = {"s": "claim", "o": "owed", "p": process.process_id}
    memory_store.set("upd:7", claim, ttl_ms=60_000)
    memory_store.set("upd:8", idempotency.DONE, ttl_ms=60_000)
    failures = {"left": 2}
    answering = memory_store.delete_if_equal

    def hung_at_first(*args: Any, **kwargs: Any) -> bool:
        if failures["left"]:
            failures["left"] -= 1
            raise StateUnavailableError("no answer")
        return answering(*args, **kwargs)

    monkeypatch.setattr(memory_store, "delete_if_equal", hung_at_first)
    process.hold(memory_store)
    try:
        process.owe_release(memory_store, "upd:7", claim)
        process.owe_release(memory_store, "upd:8", claim)
        deadline = time.monotonic() + 10
        while memory_store.get("upd:7") is not None or process._owed:
            assert time.monotonic() < deadline, (memory_store.get("upd:7"), process._owed)
            time.sleep(0.05)
    finally:
        process.stop()
    assert failures["left"] == 0
    assert memory_store.get("upd:8") == idempotency.DONE


# --- real processes, on the shared backends ------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_killed_workers_update_is_handled_on_redelivery_within_the_liveness_ttl(
    shared_kv: KVStore, fake_telegram: FakeTelegramServer, settings: Any
) -> None:
    from tests.integration.claim_worker import hold_claim

    wire_bot(settings, fake_telegram)
    settings.UPDATE_CLAIM_TTL_SECONDS = 3600  # the claim itself would block for an hour
    settings.UPDATE_LIVENESS_TTL_SECONDS = LIVENESS_TTL
    update = make_message_update("/start", chat_id=5, user_id=5)
    ctx = multiprocessing.get_context("spawn")
    events = ctx.Queue()
    worker = ctx.Process(
        target=hold_claim,
        args=(
            shared_kv.url,
            shared_kv.prefix,
            _db_name(shared_kv),
            LIVENESS_TTL,
            update["update_id"],
            events,
        ),
    )
    worker.start()
    try:
        kind, claim = events.get(timeout=120)
        assert kind == "claimed" and isinstance(claim, dict)
        with override_store(shared_kv):
            # Alive, its heartbeat keeps the claim for longer than the liveness TTL.
            time.sleep(2 * LIVENESS_TTL)
            assert process_update(update) == Outcome.IN_PROGRESS
            os.kill(worker.pid, signal.SIGKILL)  # type: ignore[arg-type]
            worker.join(timeout=30)
            killed_at = time.monotonic()
            outcome = Outcome.IN_PROGRESS
            while outcome == Outcome.IN_PROGRESS and time.monotonic() - killed_at < 120:
                time.sleep(0.5)
                outcome = process_update(update)
            waited = time.monotonic() - killed_at
    finally:
        if worker.is_alive():
            worker.kill()
            worker.join(timeout=30)
    assert outcome == Outcome.PROCESSED, outcome
    print(f"re-delivery handled {waited:.1f} s after SIGKILL (liveness TTL {LIVENESS_TTL} s)")
    assert idempotency.is_done(shared_kv.get(f"upd:{update['update_id']}"))
    assert len(fake_telegram.calls_to("sendMessage")) == 1
    assert worker.exitcode == -signal.SIGKILL


ROUNDS = 18
RACERS = 4


@pytest.mark.django_db(transaction=True)
def test_live_workers_racing_for_one_update_never_both_win(
    shared_kv: KVStore, settings: Any
) -> None:
    """Each round the parent sets the marker up (absent, a dead process's claim, a live
    process's claim), then four worker processes claim that update at once."""
    from tests.integration.claim_worker import race_claims

    settings.UPDATE_LIVENESS_TTL_SECONDS = LIVENESS_TTL
    # The parent's claims below live an hour, so its heartbeat must too (it beats as long as
    # the claims it made can live): on a slow machine the rounds take longer than 90 s.
    settings.UPDATE_CLAIM_TTL_SECONDS = 3600
    first = 700_000 + (uuid.uuid4().int % 1000) * 100
    live_id = liveness.current().hold(shared_kv)  # the parent beats: a live owner
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(RACERS + 1)
    results = ctx.Queue()
    args = (shared_kv.url, shared_kv.prefix, _db_name(shared_kv), LIVENESS_TTL, first, ROUNDS)
    workers = [
        ctx.Process(target=race_claims, args=(*args, barrier, results, n)) for n in range(RACERS)
    ]
    for worker in workers:
        worker.start()
    kinds = ["absent", "dead", "live"]
    for round_no in range(ROUNDS):
        kind = kinds[round_no % 3]
        key = f"upd:{first + round_no}"
        if kind == "dead":
            shared_kv.set(key, _dead_claim(), ttl_ms=3_600_000)
        elif kind == "live":
            live_id = liveness.current().hold(shared_kv)  # a live worker's new claim
            shared_kv.set(key, {"s": "claim", "o": "parent", "p": live_id}, ttl_ms=3_600_000)
        barrier.wait(timeout=120)
        barrier.wait(timeout=120)
    won = [results.get(timeout=120) for _ in workers]
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    for round_no in range(ROUNDS):
        winners = [o for _, rounds in won for (r, o) in rounds if r == round_no]
        marker = shared_kv.get(f"upd:{first + round_no}")
        if kinds[round_no % 3] == "live":
            assert winners == [], round_no
            assert marker["o"] == "parent"
        else:
            assert len(winners) == 1, (round_no, winners)
            assert marker["o"] == winners[0]
