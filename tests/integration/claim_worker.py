"""Child processes for the claim tests: a worker that holds a claim until it is killed, and
workers racing for the same updates (started with the spawn method)."""

from __future__ import annotations

import os
import time
from typing import Any


def _setup(db_name: str | None, liveness_ttl: int) -> None:
    os.environ["UPDATE_LIVENESS_TTL_SECONDS"] = str(liveness_ttl)
    os.environ["UPDATE_CLAIM_TTL_SECONDS"] = "3600"  # only liveness can free a claim quickly
    from tests.contract.race_worker import setup_django

    setup_django(db_name)


def hold_claim(
    url: str, prefix: str, db_name: str | None, liveness_ttl: int, update_id: int, events: Any
) -> None:
    """Claim ``update_id`` like a webhook worker would, then stay busy until killed."""
    _setup(db_name, liveness_ttl)
    from telegram_bot.pipeline.process import _claim
    from telegram_bot.state import open_store

    store = open_store(url, prefix=prefix)
    claim = _claim(store, update_id, replay=False)
    events.put(("claimed", claim))
    while True:  # a handler stuck on something; the heartbeat thread keeps beating
        time.sleep(1)


def race_claims(
    url: str,
    prefix: str,
    db_name: str | None,
    liveness_ttl: int,
    first_update: int,
    rounds: int,
    barrier: Any,
    results: Any,
    worker: int,
) -> None:
    """Each round: wait for the parent to set the marker up, then claim the round's update."""
    _setup(db_name, liveness_ttl)
    from telegram_bot.pipeline.process import _claim
    from telegram_bot.state import open_store

    store = open_store(url, prefix=prefix)
    won: list[tuple[int, str]] = []
    for round_no in range(rounds):
        barrier.wait(timeout=60)  # the parent has written this round's marker
        claim = _claim(store, first_update + round_no, replay=False)
        if isinstance(claim, dict):
            won.append((round_no, claim["o"]))
        barrier.wait(timeout=60)  # everyone has tried
    results.put((worker, won))
