"""Keys scoped by the bot's id (``STATE_KEYS_BY_BOT``), and the move of an existing deployment's
keys of the unscoped format to the scoped one (``manage.py move_state_keys``).

A scoped store keeps the key ``<family>:<rest>`` at ``<family>:<bot>:<rest>`` (``KVStore._raw``),
so that two bots share one Redis or one database without seeing each other's keys. A key of
the unscoped format is a key of a declared family whose part after the family does not start
with this bot's id nor with another scoped bot's (each scoped store registers its bot beside
the keys: ``#bot:<id>``).

The move renames each such key to its scoped name, one atomic step per key
(``KVStore.move_key``: merged when traffic wrote the scoped key meanwhile); it may run while the
bot serves updates, be stopped and run again (a moved key is not found again). When a pass
finds nothing left to move it sets the store's ``#moved:<bot>`` flag: until then every scoped
process also reads an update's claims and done-markers where the unscoped format kept them
(``keys.FALLBACK_FAMILIES``), so that an update done before the upgrade is answered as a
duplicate after it.
"""

from __future__ import annotations

import itertools
import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from telegram_bot.state.base import KVStore
from telegram_bot.state.keys import FAMILIES

log = logging.getLogger(__name__)
BOT_MARK = "#bot:"
# A store holding at most this many keys is asked at its first opening whether any is of the
# unscoped format; when none is, the deployment starts scoped (the flag is set at once).
SETTLE_LIMIT = 1000
MAX_PASSES = 5


def register_bot(store: KVStore) -> None:
    """Record that ``store``'s bot writes scoped keys here, so that another bot's move of
    the same storage leaves them alone."""
    if store.bot is not None:
        store.set_raw_flag(f"{store.prefix}{BOT_MARK}{store.bot}")


def scoped_bots(store: KVStore) -> set[str]:
    """The ids (as text) of the bots registered in ``store``'s storage, its own included."""
    mark = f"{store.prefix}{BOT_MARK}"
    bots = {key[len(mark) :] for key in store.raw_keys(BOT_MARK)}
    if store.bot is not None:
        bots.add(str(store.bot))
    return bots


def unscoped_name(store: KVStore, raw_key: str, bots: set[str]) -> str | None:
    """The key a raw key of the unscoped format stands for (``family:rest``, for a packed
    group its hash ``family:rest#``), or None for any other raw key (scoped, a flag, not of a
    declared family, another prefix's)."""
    if not raw_key.startswith(store.prefix):
        return None
    key = raw_key[len(store.prefix) :]
    family, sep, rest = key.partition(":")
    if not sep or not rest or family not in FAMILIES:
        return None
    if rest.partition(":")[0] in bots:
        return None
    return key


@dataclass
class MoveReport:
    """What a move did (or, dry, would do), by family: renamed, merged; and the passes."""

    renamed: Counter[str] = field(default_factory=Counter)
    merged: Counter[str] = field(default_factory=Counter)
    passes: int = 0
    finished: bool = False

    @property
    def moved(self) -> int:
        return sum(self.renamed.values()) + sum(self.merged.values())


def move_keys(
    store: KVStore,
    *,
    dry_run: bool = False,
    page: int = 1000,
    progress: Callable[[int], None] | None = None,
) -> MoveReport:
    """Move every key of the unscoped format to its scoped name, pass after pass until a
    pass finds none (at most MAX_PASSES: an older version still writing the old format would
    keep adding some), then set the moved flag. ``dry_run``: count, move nothing, one pass.
    ``progress`` is called with the running count every ``page`` keys moved."""
    if store.bot is None:
        raise ValueError("the store is not scoped by a bot id: nothing to move to")
    if not dry_run:
        register_bot(store)
    bots = scoped_bots(store)
    report = MoveReport()
    while report.passes < (1 if dry_run else MAX_PASSES):
        report.passes += 1
        found = 0
        # Moved while listed: a renamed key met again later in the walk is scoped, skipped.
        for raw_key in store.raw_keys("", page):
            key = unscoped_name(store, raw_key, bots)
            if key is None:
                continue
            found += 1
            family = key.partition(":")[0]
            raw_to = store.raw_name(key)
            if dry_run:
                bucket = report.merged if store.raw_exists(raw_to) else report.renamed
                bucket[family] += 1
                continue
            outcome = store.move_key(raw_key, raw_to)
            if outcome == 1:
                report.renamed[family] += 1
            elif outcome == 2:
                report.merged[family] += 1
            if progress is not None and report.moved % page == 0:
                progress(report.moved)
        if found == 0:
            report.finished = True
            break
    if report.finished and not dry_run:
        store.mark_moved()
    return report


def settle(store: KVStore) -> None:
    """At a scoped store's first opening: register its bot, and when the moved flag is not
    set but the storage is small and holds no key of the unscoped format (a new deployment),
    set it, so that no read looks for the unscoped format."""
    if store.bot is None:
        return
    register_bot(store)
    if not store.reads_unscoped():
        return
    # At most SETTLE_LIMIT keys read, the bots' marks among them (no walk of a large store).
    keys = list(itertools.islice(store.raw_keys("", SETTLE_LIMIT), SETTLE_LIMIT + 1))
    mark = f"{store.prefix}{BOT_MARK}"
    bots = {key[len(mark) :] for key in keys if key.startswith(mark)} | {str(store.bot)}
    if len(keys) > SETTLE_LIMIT or any(unscoped_name(store, key, bots) for key in keys):
        log.warning(
            "KV keys written without the bot's id may be here: counters and sessions "
            "written before the upgrade are not seen until `manage.py move_state_keys` "
            "moves them (or set STATE_KEYS_BY_BOT=false); done-markers are read meanwhile"
        )
        return
    store.mark_moved()
