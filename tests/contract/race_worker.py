"""Child process for the cross-process contract tests (started with the spawn method)."""

from __future__ import annotations

import os
from typing import Any


def setup_django(db_name: str | None) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings_test")
    import django

    django.setup()
    if db_name:
        from django.db import connections

        # Talk to the test database the parent process created, not the real one.
        connections["default"].settings_dict["NAME"] = db_name


def race_compare_and_set(
    url: str, prefix: str, db_name: str | None, rounds: int, barrier: Any, results: Any, worker: int
) -> None:
    setup_django(db_name)
    from telegram_bot.state import open_store

    store = open_store(url, prefix=prefix)
    won: list[int] = []
    for round_no in range(rounds):
        barrier.wait(timeout=60)
        expected = None if round_no == 0 else round_no - 1
        if store.compare_and_set("lock:race", expected, round_no):
            won.append(round_no)
        barrier.wait(timeout=60)
    results.put((worker, won))


def increment_many(url: str, prefix: str, db_name: str | None, times: int, barrier: Any) -> None:
    setup_django(db_name)
    from telegram_bot.state import open_store

    store = open_store(url, prefix=prefix)
    barrier.wait(timeout=60)
    for _ in range(times):
        store.increment("counter:processes")
