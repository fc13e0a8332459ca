"""The per-update markers in the KV store (``upd:<update_id>``): claim, done, released.

A claim names its process; when that process is gone (its ``live:`` key expired, see
``liveness``) another worker takes the claim over at once instead of waiting for its TTL.

A handler whose effects live in the KV store makes them idempotent with ``commit_once``: its
ops and the done-marker are written in one atomic step, so a re-delivered update (the worker
died after the commit but before answering Telegram) changes nothing the second time.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from django.conf import settings

from telegram_bot import liveness
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


def new_claim(store: KVStore) -> dict[str, Any]:
    """A claim unique to this attempt (``o``) naming this process (``p``), whose liveness key
    in ``store`` is written if needed and kept fresh while the claim can live."""
    return {"s": "claim", "o": uuid.uuid4().hex, "p": liveness.current().hold(store)}


def is_done(value: Any) -> bool:
    return isinstance(value, dict) and value.get("s") == "done"


def is_claimed(value: Any) -> bool:
    """A worker holds the update (claims expire, so a dead worker's claim goes away)."""
    return isinstance(value, dict) and value.get("s") == "claim"


def owner_gone(store: KVStore, value: Any) -> bool:
    """True when ``value`` is a claim whose process no longer beats (killed, crashed).

    A claim without a process id (written before liveness existed) is never judged gone: it
    is waited for until its TTL, as before.
    """
    if not is_claimed(value) or not liveness.is_process_id(value.get("p")):
        return False
    return not liveness.alive(store, value["p"])


def take_over(
    store: KVStore, update_id: int, current: Any, claim: dict[str, Any], ttl_ms: int
) -> bool:
    """Replace ``current``, a claim whose process is gone, by ``claim``.

    Compare-and-set from the claim we read: of several claimants only one replaces it, and one
    that comes later finds the winner's claim, whose process is alive. A live process's claim is
    never taken: its liveness key is there as long as its heartbeat runs.
    """
    return owner_gone(store, current) and store.compare_and_set(
        marker_key(update_id), current, claim, ttl_ms
    )


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
