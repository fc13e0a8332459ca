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


def marker_key(update_id: int) -> str:
    return f"upd:{update_id}"


def done_ttl_ms() -> int:
    return int(settings.UPDATE_DONE_TTL_HOURS) * 3600 * 1000


def new_claim() -> dict[str, Any]:
    return {"s": "claim", "o": uuid.uuid4().hex}


def is_done(value: Any) -> bool:
    return isinstance(value, dict) and value.get("s") == "done"


def mark_done(store: KVStore, update_id: int) -> None:
    store.set(marker_key(update_id), DONE, done_ttl_ms())


def commit_once(store: KVStore, update_id: int, ops: Sequence[Op]) -> bool:
    """Apply ``ops`` together with the done-marker of ``update_id``; False if already done."""
    return store.apply_once(marker_key(update_id), DONE, ops, done_ttl_ms())
