"""The per-update markers in the KV store (``upd:<update_id>``): claim, done, released.

A handler whose effects live in the KV store makes them idempotent with ``commit_once``: its
ops and the done-marker are written in one atomic step, so a re-delivered update (the worker
died after the commit but before answering Telegram) changes nothing the second time.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from django.conf import settings

from telegram_bot.state import KVStore
from telegram_bot.state.base import Op

DONE: dict[str, Any] = {"s": "done"}
# A dead-lettered update: final for re-deliveries (answered as duplicates), but unlike DONE it
# does not stop commit_once, so a replay whose handler had not committed yet can commit.
DEAD: dict[str, Any] = {"s": "dead"}


def marker_key(update_id: int) -> str:
    return f"upd:{update_id}"


def done_ttl_ms() -> int:
    return int(settings.UPDATE_DONE_TTL_HOURS) * 3600 * 1000


def new_claim() -> dict[str, Any]:
    return {"s": "claim", "o": uuid.uuid4().hex}


def is_done(value: Any) -> bool:
    return isinstance(value, dict) and value.get("s") == "done"


def is_claimed(value: Any) -> bool:
    """A worker holds the update (claims expire, so a dead worker's claim goes away)."""
    return isinstance(value, dict) and value.get("s") == "claim"


def is_final(value: Any) -> bool:
    """Done or dead-lettered: a re-delivery of this update is not processed again."""
    return isinstance(value, dict) and value.get("s") in ("done", "dead")


def mark_done(store: KVStore, update_id: int) -> None:
    store.set(marker_key(update_id), DONE, done_ttl_ms())


def mark_dead(store: KVStore, update_id: int, claim: dict[str, Any] | None) -> None:
    """Mark a dead-lettered update, unless its handler already committed (the marker is then
    DONE and stays DONE, so a replay cannot apply those effects a second time)."""
    if claim is not None:
        store.compare_and_set(marker_key(update_id), claim, DEAD, done_ttl_ms())


def commit_once(store: KVStore, update_id: int, ops: Sequence[Op]) -> bool:
    """Apply ``ops`` together with the done-marker of ``update_id``; False if already done."""
    return store.apply_once(marker_key(update_id), DONE, ops, done_ttl_ms())
