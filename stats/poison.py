"""Poison marks in the KV store: ``stats:poison:{chat}:{day}:{category}`` -> ``{"at": ms}``.

The live writer sets one when its database write fails (the KV store answered a moment ago,
the database did not). Finalize moves marks of closed days onto their coverage rows and then
retires them with a compare-and-set to a tombstone ``{"retired": ms}``: a mark set again in
the meantime is newer and stays. Readers treat anything but ``{"at": int}`` as no mark.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from typing import Any

from stats import keys
from stats.config import counter_ttl_ms
from telegram_bot.state import KVStore

TOMBSTONE_TTL_MS = 60_000


def poison_mark(store: KVStore, chat_id: int, day: date, category: str, at: int) -> None:
    store.set(keys.poison_key(chat_id, day, category), {"at": at}, counter_ttl_ms())


def poison_read(value: Any) -> int | None:
    """The time of a mark, or None for a tombstone or anything else."""
    if isinstance(value, dict) and isinstance(value.get("at"), int):
        return int(value["at"])
    return None


def poison_marks(store: KVStore, prefix: str = keys.POISON) -> Iterator[tuple[int, date, str, int]]:
    """Live marks under ``prefix``: (chat, day, category, at)."""
    for key in store.scan_all(prefix):
        parsed = keys.parse_poison_key(key)
        at = poison_read(store.get(key)) if parsed else None
        if parsed is not None and at is not None:
            yield (*parsed, at)


def poison_retire(store: KVStore, chat_id: int, day: date, category: str, at: int) -> bool:
    """Retire the mark set at ``at``; False if it was set again since (it stays)."""
    return store.compare_and_set(
        keys.poison_key(chat_id, day, category),
        {"at": at},
        {"retired": at},
        TOMBSTONE_TTL_MS,
    )
