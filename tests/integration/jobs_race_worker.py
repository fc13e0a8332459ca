"""Child process of the dedupe-key race across processes (started with the spawn method)."""

from __future__ import annotations

from typing import Any

from tests.contract.race_worker import setup_django


def enqueue_rounds(db_name: str, key: str, rounds: int, barrier: Any, results: Any) -> None:
    setup_django(db_name)
    from django.db import connections

    from telegram_bot.jobs.services import job_enqueue

    for round_no in range(rounds):
        barrier.wait(timeout=60)
        try:
            results.put((round_no, job_enqueue("core.noop", {}, dedupe_key=key).pk))
        except Exception as exc:  # reported to the parent, which fails the test
            results.put((round_no, f"{type(exc).__name__}: {exc}"))
        barrier.wait(timeout=60)
    connections.close_all()
