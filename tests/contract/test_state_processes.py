"""The contract across processes: only the backends several processes can share."""

from __future__ import annotations

import multiprocessing

from django.db import connection

from telegram_bot.state import KVStore

ROUNDS = 20
PROCESSES = 4


def _target(store: KVStore) -> tuple[str, str, str | None]:
    db_name = connection.settings_dict["NAME"] if store.url.startswith("db://") else None
    return store.url, store.prefix, db_name


def test_four_processes_racing_compare_and_set_have_one_winner_per_round(
    shared_kv: KVStore,
) -> None:
    from tests.contract.race_worker import race_compare_and_set

    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(PROCESSES)
    results = ctx.Queue()
    url, prefix, db_name = _target(shared_kv)
    workers = [
        ctx.Process(
            target=race_compare_and_set, args=(url, prefix, db_name, ROUNDS, barrier, results, n)
        )
        for n in range(PROCESSES)
    ]
    for worker in workers:
        worker.start()
    won = [results.get(timeout=120) for _ in workers]
    for worker in workers:
        worker.join(timeout=30)
        assert worker.exitcode == 0
    per_round = [sum(round_no in rounds for _, rounds in won) for round_no in range(ROUNDS)]
    assert per_round == [1] * ROUNDS
    assert shared_kv.get("lock:race") == ROUNDS - 1


def test_four_processes_incrementing_lose_nothing(shared_kv: KVStore) -> None:
    from tests.contract.race_worker import increment_many

    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(PROCESSES)
    url, prefix, db_name = _target(shared_kv)
    workers = [
        ctx.Process(target=increment_many, args=(url, prefix, db_name, 150, barrier))
        for _ in range(PROCESSES)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
        assert worker.exitcode == 0
    assert shared_kv.get("counter:processes") == PROCESSES * 150
