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


def observe_and_die(url: str, prefix: str, db_name: str | None, update: dict[str, Any]) -> None:
    """Run ``update`` through the pipeline with two committing observers; the process is
    killed (SIGKILL) right after the first observer's commit, before the second runs."""
    setup_django(db_name)
    import signal

    from django.conf import settings

    from telegram_bot.pipeline import process as pipeline

    settings.UPDATE_CLAIM_TTL_SECONDS = 1  # the dead worker's claim goes away soon
    from telegram_bot.pipeline.router import Observer, Router
    from telegram_bot.state import Increment, open_store, override_store

    def first(ctx: Any) -> None:
        ctx.commit_once([Increment("counter:first")])
        os.kill(os.getpid(), signal.SIGKILL)

    def second(ctx: Any) -> None:
        ctx.commit_once([Increment("counter:second")])

    router = Router(
        [],
        observers=[
            Observer.on("t.first", "message", first),
            Observer.on("t.second", "message", second, order=200),
        ],
    )
    pipeline.get_router = lambda: router  # type: ignore[assignment]
    with override_store(open_store(url, prefix=prefix)):
        pipeline.process_update(update)
