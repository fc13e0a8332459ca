"""Poison marks in the KV store: ``stats:poison:{chat}:{day}:{category}`` -> ``{"at": ms}``.

The live writer sets one when its database write fails (the KV store answered a moment ago,
the database did not). Finalize moves marks of closed days onto their coverage rows and then
retires them with a compare-and-set to a tombstone ``{"retired": ms}``: a mark set again in
the meantime is newer and stays. Readers treat anything but ``{"at": int}`` as no mark.

Before the marks, the live writer records WHAT the failed write missed, per (chat, day):
``stats:failed:{chat}:{day}`` -> ``{"users": {"<user>": [column, ...]}}`` (compare-and-set,
so concurrent failures merge). Readers repair a day with ``get``s of exactly those counters
(the KV counters hold every fact: they are committed before the database write), never with a
prefix scan, which on Redis walks the whole keyspace. Every other column of the day is right
in the database: only failed writes are missing from it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping
from datetime import date
from typing import Any

from stats import keys
from stats.config import counter_ttl_ms
from telegram_bot.errors import StateError
from telegram_bot.state import KVStore

log = logging.getLogger(__name__)

TOMBSTONE_TTL_MS = 60_000
FAILED_CAS_ATTEMPTS = 25


def poison_mark(store: KVStore, chat_id: int, day: date, category: str, at: int) -> None:
    store.set(keys.poison_key(chat_id, day, category), {"at": at}, counter_ttl_ms())
    store.set(keys.POISON_FLAG, {"at": at}, counter_ttl_ms())


def poison_flag(store: KVStore) -> Any:
    """The flag every poison mark sets, or None when no mark was written since it was cleared."""
    return store.get(keys.POISON_FLAG)


def poison_flag_clear(store: KVStore, seen: Any) -> None:
    """Clear the flag unless a new mark set it again since ``seen`` was read."""
    store.compare_and_set(keys.POISON_FLAG, seen, {"cleared": True}, 1)


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


def failed_record(store: KVStore, rows: Iterable[tuple[int, date, int, Iterable[str]]]) -> None:
    """Add (chat, day, user, columns) of failed database writes to the days' indexes.

    Never raises (it runs after the KV commit, on the failure path): an index that cannot be
    written is logged; the poison marks still say the day is not to be trusted.
    """
    by_day: dict[tuple[int, date], dict[str, set[str]]] = {}
    for chat_id, day, user_id, columns in rows:
        by_day.setdefault((chat_id, day), {}).setdefault(str(user_id), set()).update(columns)
    for (chat_id, day), users in sorted(by_day.items()):
        key = keys.failed_key(chat_id, day)
        try:
            for _ in range(FAILED_CAS_ATTEMPTS):
                current = store.get(key)
                merged = _failed_merge(current, users)
                if merged == current:
                    break
                if store.compare_and_set(key, current, merged, counter_ttl_ms()):
                    break
            else:
                log.error("stats failed-writes index %s: too much contention, not updated", key)
        except StateError as exc:
            log.error("cannot record failed stats writes of %s %s: %s", chat_id, day, exc)


def failed_decode(value: Any) -> dict[int, set[str]]:
    """The failed-writes index's value (as read with ``get_many``) per user."""
    return _failed_users(value)


def _failed_users(value: Any) -> dict[int, set[str]]:
    users = value.get("users") if isinstance(value, dict) else None
    if not isinstance(users, dict):
        return {}
    failed: dict[int, set[str]] = {}
    for user, columns in users.items():
        if not isinstance(columns, list):
            continue
        valid = {c for c in columns if isinstance(c, str) and c in keys.COLUMN_CATEGORY}
        try:
            user_id = int(user)
        except ValueError:
            continue
        if valid:
            failed[user_id] = valid
    return failed


def _failed_merge(current: Any, users: Mapping[str, set[str]]) -> dict[str, Any]:
    merged = {str(user): set(columns) for user, columns in _failed_users(current).items()}
    for user, columns in users.items():
        merged.setdefault(user, set()).update(columns)
    return {"users": {user: sorted(columns) for user, columns in sorted(merged.items())}}
