"""The per-update markers in the KV store: ``upd:<update_id>`` (claim, dead, released; done in
the legacy layout), ``upd:d:<update_id // 100>#<update_id % 100>`` (done, in the compact
layout: a packed key, so that Redis keeps 100 updates' done-markers in one small hash) and
``upd:<update_id>:<unit>`` (one unit of the update, an observer or the routed handler, has
committed or finished; in the compact layout not written when the same step writes the
update's done-marker, which says as much). Both layouts are read whatever the setting
(``read_marker``), so an upgrade keeps the markers written before it.

A claim names its process; when that process is gone (its ``live:`` key expired, see
``liveness``) another worker takes the claim over at once instead of waiting for its TTL.

An update runs as units: its observers, then its routed handler (``pipeline``). A unit whose
effects live in the KV store makes them idempotent with ``commit_once``: its ops and its own
unit marker are written in one atomic step, so a re-delivered or replayed update (the worker
died after the commit, or a later unit failed) changes nothing the second time. The last unit
to run also writes the update's done-marker in that same step, so an update costs one claim
and one commit (the usual group message, foreseen, one step: ``process._finish_foreseen``).
Per-unit markers rather than one marker for the update: a unit that commits must not make the
update done while a later unit has not run yet, or a crash between the two would lose the
later one.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from django.conf import settings

from telegram_bot.pipeline import liveness
from telegram_bot.state import KVStore
from telegram_bot.state.base import Op, Put

DONE: dict[str, Any] = {"s": "done"}
# A dead-lettered update: final for re-deliveries (answered as duplicates), but unlike DONE it
# does not stop commit_once, so a replay whose handler had not committed yet can commit.
DEAD: dict[str, Any] = {"s": "dead"}
# A claim given up (a 503) by an older version: written by compare-and-set with a TTL of 1 ms;
# until it expires the next claimant takes it as absent. Claims are now given up with
# delete_if_equal (a full Redis refuses the write, not the delete).
RELEASED: dict[str, Any] = {"s": "released"}


# Done-markers of the compact layout: one group (a Redis hash) per GROUP consecutive update ids,
# at most 100 fields, so Redis keeps it in its small encoding (hash-max-listpack-entries 128).
GROUP = 100


def compact() -> bool:
    """The compact key layout (``STATE_KEY_LAYOUT``): done-markers packed in groups
    (``done_key``), no unit marker beside a done-marker written in the same step."""
    return settings.STATE_KEY_LAYOUT == "compact"


def marker_key(update_id: int) -> str:
    """The update's claim (both layouts), and its done or dead marker in the legacy layout
    (and a dead marker in both)."""
    return f"upd:{update_id}"


def done_key(update_id: int) -> str:
    """The update's done-marker in the compact layout: a packed key, ``GROUP`` updates a
    group (``keys.PACK``)."""
    return f"upd:d:{update_id // GROUP}#{update_id % GROUP}"


def read_marker(store: KVStore, update_id: int) -> Any:
    """What the update's markers say, in one read of both layouts: its done-marker
    (``done_key``) when set, else what ``marker_key`` holds (a claim, dead, or a done-marker
    of the legacy layout), else None."""
    done, current = store.get_many([done_key(update_id), marker_key(update_id)])
    return done if done is not None else current


def unit_marker_key(update_id: int, unit: str) -> str:
    return f"upd:{update_id}:{unit}"


def done_ttl_ms() -> int:
    return int(settings.UPDATE_DONE_TTL_HOURS) * 3600 * 1000


_attempts = itertools.count(1)  # thread-safe under the GIL; a forked child has its own id


def new_claim(store: KVStore) -> dict[str, Any]:
    """A claim unique to this attempt (``o``) naming this process (``p``), whose liveness key
    in ``store`` is written if needed and kept fresh while the claim can live."""
    process_id = liveness.current().hold(store)
    # Unique with the process id beside it: a counter, not a uuid4 (a system call a message).
    return {"s": "claim", "o": f"{next(_attempts):x}", "p": process_id}


def is_done(value: Any) -> bool:
    return isinstance(value, dict) and value.get("s") == "done"


def is_released(value: Any) -> bool:
    return isinstance(value, dict) and value.get("s") == "released"


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


def claim_ttl_ms() -> int:
    return int(settings.UPDATE_CLAIM_TTL_SECONDS) * 1000


def _done_ops(update_id: int) -> list[Op]:
    """The compact layout's done-marker (in its group, ``UPDATE_DONE_TTL_HOURS``) and, in place
    of the claim at ``marker_key``, ``DONE`` for the claim's TTL: so that no claim of a
    finished update is left behind for a replay to take for one in progress (a replay reads
    ``marker_key``), and nothing stays there after the claim would have expired. In key
    order, as a commit's ops are (the database store locks rows in that order)."""
    return [
        Put(marker_key(update_id), DONE, claim_ttl_ms()),
        Put(done_key(update_id), DONE, done_ttl_ms()),
    ]


def mark_done(store: KVStore, update_id: int) -> None:
    """The update is done: one KV call. Compact: the packed done-marker, and ``DONE`` in place
    of our claim at ``marker_key`` for the claim's TTL (``_done_ops``), in one ``apply_once``."""
    if compact():
        done = [Put(done_key(update_id), DONE, done_ttl_ms())]
        store.apply_once(marker_key(update_id), DONE, done, claim_ttl_ms())
    else:
        store.set(marker_key(update_id), DONE, done_ttl_ms())


def forget(store: KVStore, update_id: int) -> None:
    """Delete the update's claim and done-markers, of both layouts (the production check's
    test update; tests: a crash before the done-marker)."""
    store.delete(marker_key(update_id))
    store.delete(done_key(update_id))


def mark_dead(store: KVStore, update_id: int, claim: dict[str, Any] | None) -> None:
    """Mark a dead-lettered update, unless its handler already committed (the marker is then
    DONE and stays DONE, so a replay cannot apply those effects a second time)."""
    if claim is not None:
        store.compare_and_set(marker_key(update_id), claim, DEAD, done_ttl_ms())


def commit_once(
    store: KVStore, update_id: int, ops: Sequence[Op], *, unit: str, finish: bool
) -> bool:
    """Apply ``ops`` with the marker of ``unit``; False if that unit had committed before.

    ``finish``: this is the update's last unit, so its done-marker is written in the same
    atomic step (no separate write after it).
    """
    ttl = done_ttl_ms()
    if finish:
        ops = (
            [*ops, *_done_ops(update_id)]
            if compact()
            else [*ops, Put(marker_key(update_id), DONE, ttl)]
        )
    return store.apply_once(unit_marker_key(update_id, unit), DONE, ops, ttl)


def mark_units_done(store: KVStore, update_id: int, units: Sequence[str]) -> None:
    """Remember the units that finished or committed, for an update that ends as a dead
    letter: its replay runs only the others (no effect applied and no reply sent twice). Kept
    as long as the letter may be replayed, which can be longer than a done-marker lives."""
    ttl = max(done_ttl_ms(), int(settings.DEAD_LETTER_RETENTION_DAYS) * 24 * 3600 * 1000)
    for unit in units:
        store.set(unit_marker_key(update_id, unit), DONE, ttl)


def unit_done(store: KVStore, update_id: int, unit: str) -> bool:
    return is_done(store.get(unit_marker_key(update_id, unit)))
