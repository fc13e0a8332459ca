"""The live writer: the increments of counted messages, added to ``stats_daily_user``.

Ordering (``count_once``, the update path's entry point): in one database transaction the day's
lock (``stats.daylock``) is taken SHARED and the additive upsert written (on PostgreSQL one
query through Django's cursor, its values bound by psycopg; outside an ``atomic`` block, the
webhook's case, ``BEGIN`` goes in it too and ``COMMIT`` is the message's only other statement),
then the KV commit runs (the counters with the
update's done-marker), and the transaction commits only if that commit applied (a duplicate, or
a commit that raises, rolls the add back), releasing the lock. The backfill and the
reconciliation hold the same lock EXCLUSIVE while they read counters and write, so they never
see a KV increment whose database add is still in flight; a process killed between the KV
commit and the database commit leaves the increment in the KV store only (its transaction rolls
back), where the backfill's rebuild or the reconciliation (late marker, ``stats.reconcile``)
finds it. With the database KV store the commit joins this transaction: the two writes are then
one. On PostgreSQL with Redis, a message of today joins the process's write-behind epoch
instead (``stats.write_behind``): the same order, with the epoch's transaction for the
message's own.

Rows are merged per (chat, day, user), sorted, and written with ONE additive upsert
(``col = col + excluded.col``), followed, in the same transaction, by one upsert of the coverage
rows (also sorted) that this process does not already know to be live. Every writer (this one
and the backfill) takes rows in the same order, table by table, so concurrent writers cannot
deadlock.

A failed write loses nothing: the KV counters hold the fact (a database that fails before
the KV commit is left out: the commit runs without the lock). The columns it missed are
recorded per (chat, day, user) in the KV index ``stats:failed:{chat}:{day}`` (readers repair
the day with gets of exactly those counters), and every (chat, day, category) of the rows is
marked poisoned, in the KV store
(``stats:poison:...``, reachable when the database is not) and, if the database answers, on its
coverage row. The dashboard does not present poisoned numbers as final; finalize clears the
mark once a backfill phase that started after the failure has rebuilt the category.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

import cachetools
from django.db import (
    DEFAULT_DB_ALIAS,
    DatabaseError,
    connection,
    connections,
    transaction,
)
from django.db.backends.base.base import BaseDatabaseWrapper
from django.utils import timezone

from stats import keys, write_behind
from stats.daylock import day_lock_key, lock_statement
from stats.models import CATEGORIES
from stats.poison import failed_record, poison_mark
from stats.unsettled import unsettled_record
from telegram_bot.errors import StateError, StateOutcomeUnknownError
from telegram_bot.state import KVStore

log = logging.getLogger(__name__)

COLUMN_CATEGORY = keys.COLUMN_CATEGORY
MEMO_SECONDS = 300.0
MEMO_MAX = 50_000


@dataclass(frozen=True)
class RowDelta:
    chat_id: int
    day: date
    user_id: int
    deltas: dict[str, int]

    @property
    def categories(self) -> set[str]:
        return {COLUMN_CATEGORY[column] for column in self.deltas}


Commit = Callable[[], bool]
Statement = tuple[str, list[Any]]


def count_once(*, store: KVStore, commit: Commit, rows: Sequence[RowDelta]) -> bool:
    """Run ``commit`` (the KV commit: True if it applied, False for a duplicate) and add
    ``rows`` to the aggregates if it applied, under the days' shared lock (module docstring).
    Returns whether the commit applied. Raises only what ``commit`` raises (nothing was
    counted then); a failed database write poisons the rows instead (``live_write``).

    The add is written first, in the transaction that takes the lock (on PostgreSQL the lock
    and the add are one round trip), and that transaction commits only once ``commit``
    applied: a duplicate or a commit that raises rolls it back. So the database never holds
    an add whose KV commit did not happen, as if the add came after the commit. A commit
    whose outcome is unknown (``StateOutcomeUnknownError``: sent, never answered; it may
    still run) is rolled back too and its rows recorded, for the reconciliation to settle
    from the counters once the store answers (``stats.unsettled``).
    """
    merged = merge_rows(rows)
    try:
        return _count_once(store, commit, merged)
    except StateOutcomeUnknownError:
        if merged:
            unsettled_record(merged)
        raise


def _count_once(store: KVStore, commit: Commit, merged: list[RowDelta]) -> bool:
    db = connections[DEFAULT_DB_ALIAS]
    if merged and _own_transaction(store, db):
        behind = write_behind.get() if _all_today(merged) else None
        epoch = behind.join(day_keys(merged)) if behind is not None else None
        if behind is not None and epoch is not None:
            applied = False
            try:
                applied = commit()
            finally:
                behind.leave(epoch, store, merged if applied else None)
            return applied
        return _count_once_two_round_trips(store, commit, merged, db)
    stage = "add"
    try:
        with transaction.atomic():
            _lock_and_add(merged)
            stage = "commit"
            applied = commit()  # raises: the add rolls back with the transaction
            stage = "end"
            if not applied:
                transaction.set_rollback(True)  # a duplicate: it was counted before
    except DatabaseError as exc:
        if stage == "commit" or (stage == "end" and _kv_in_database(store)):
            raise  # the KV commit failed, or was in the transaction that failed: no count
        if stage == "add":  # the database failed before the KV commit: count in the KV store
            log.warning("stats day lock or add failed, counting without it: %s", exc)
            applied = commit()
        if applied and merged:
            poison_failed(store, merged, exc)
        return applied
    if applied and merged:
        memo_remember(touched(merged))
    return applied


def _own_transaction(store: KVStore, db: BaseDatabaseWrapper) -> bool:
    """Whether ``count_once`` may open and end its transaction with statements of its own:
    PostgreSQL with client-side binding (Django's default: several statements go in one
    query), in autocommit outside any ``atomic`` block, the KV store elsewhere."""
    return (
        db.vendor == "postgresql"
        and not db.in_atomic_block
        and db.settings_dict.get("AUTOCOMMIT", True)
        and not _server_side_binding(db)
        and not _kv_in_database(store)
    )


def _count_once_two_round_trips(
    store: KVStore, commit: Commit, merged: list[RowDelta], db: BaseDatabaseWrapper
) -> bool:
    """``count_once`` in two statements on Django's connection: ``BEGIN`` goes in the query
    with the lock and the add, and ``COMMIT`` (or ``ROLLBACK`` for a duplicate) is the second.
    The same transaction and the same order as ``transaction.atomic`` gives (the add written
    and the lock held before the KV commit, committed only once it applied), without its
    separate ``BEGIN``. A reused connection is checked by Django first (``CONN_HEALTH_CHECKS``:
    once a request), as for any query."""
    stage = "add"
    try:
        with db.cursor() as cursor:
            try:
                _begin_lock_and_add(cursor, merged)
                stage = "commit"
                applied = commit()
                stage = "end"
                cursor.execute("COMMIT" if applied else "ROLLBACK")
                stage = "ended"
            finally:
                if stage != "ended":  # whatever was raised, no transaction stays open
                    _roll_back_quietly(db, cursor)
    except DatabaseError as exc:
        if stage == "commit":
            raise  # the KV commit itself failed: nothing counted
        if stage == "add":  # the database failed before the KV commit: count in the KV store
            log.warning("stats day lock or add failed, counting without it: %s", exc)
            applied = commit()
        if applied:
            poison_failed(store, merged, exc)
        return applied
    memo_remember(touched(merged))
    return applied


# The add is derived data: its COMMIT need not wait for the WAL to reach the disk. A database
# crash may lose the last adds that were reported committed, never a part of one, and always a
# suffix of the history (an exclusive lock holder's own commit flushes every add before it):
# the same state as live writers killed between their KV commit and their database commit,
# KV-only increments, which the backfill and the reconciliation rewrite (Ordering).
ASYNC_COMMIT = "SET LOCAL synchronous_commit TO OFF"


def _begin_lock_and_add(cursor: Any, merged: Sequence[RowDelta]) -> None:
    """``BEGIN``, the lock and the add as one query (psycopg binds the values client-side and
    sends the statements together, in order)."""
    present = _lock_and_add_statements(merged)
    cursor.execute(
        "; ".join(["BEGIN", ASYNC_COMMIT, *(sql for sql, _ in present)]),
        [param for _, params in present for param in params],
    )


def _roll_back_quietly(db: BaseDatabaseWrapper, cursor: Any) -> None:
    """End a transaction ``_count_once_two_round_trips`` may have left open (a ``ROLLBACK``
    outside one only warns); a connection that cannot do even that is closed (the server then
    rolls back)."""
    try:
        cursor.execute("ROLLBACK")
    except DatabaseError:
        db.close()


def live_write(*, store: KVStore, rows: Sequence[RowDelta]) -> bool:
    """Add ``rows`` to the aggregates; if that fails, mark them poisoned and return False.

    Never raises: it runs after the KV commit, and the caller must not fail the update then.
    Takes the days' shared lock for the add only, so it is NOT ordered against the backfill
    for a commit made before it: the update path uses ``count_once``.
    """
    merged = merge_rows(rows)
    if not merged:
        return True
    try:
        with transaction.atomic():
            _lock_and_add(merged)
    except DatabaseError as exc:
        poison_failed(store, merged, exc)
        return False
    memo_remember(touched(merged))
    return True


def touched(merged: Sequence[RowDelta]) -> list[tuple[int, date, str]]:
    return sorted(
        {(row.chat_id, row.day, category) for row in merged for category in row.categories}
    )


def _lock_and_add(merged: Sequence[RowDelta]) -> None:
    """The days' shared lock, then the add (aggregates, then coverage). On PostgreSQL the
    statements go in one round trip: client-side binding (Django's default) sends them as one
    simple-protocol query, which runs them in order."""
    if not merged:
        return
    present = _lock_and_add_statements(merged)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql" and not _server_side_binding(connection):
            cursor.execute(
                "; ".join(sql for sql, _ in present),
                [param for _, params in present for param in params],
            )
            return
        for statement in present:
            cursor.execute(*statement)


def _lock_and_add_statements(merged: Sequence[RowDelta]) -> list[Statement]:
    lock = lock_statement({(row.chat_id, row.day) for row in merged}, shared=True)
    return [lock, *add_statements(merged)] if lock is not None else add_statements(merged)


def add_statements(
    merged: Sequence[RowDelta],
    triples: Sequence[tuple[int, date, str]] | None = None,
    *,
    arrays: bool = False,
) -> list[Statement]:
    """The add without the lock (the write-behind's epoch holds the days' locks already);
    ``triples``: ``touched(merged)``, when the caller has it already; ``arrays``: the rows
    as one array per column (PostgreSQL; an epoch's many rows: psycopg binds a list for
    less than a value a row)."""
    triples = touched(merged) if triples is None else triples
    upsert = _upsert_arrays_statement(merged) if arrays else _upsert_statement(merged)
    statements = [upsert, _coverage_live_statement(triples)]
    return [s for s in statements if s is not None]


def _all_today(merged: Sequence[RowDelta]) -> bool:
    """Whether every row is of today (UTC) or later: only those go to the write-behind. A
    late message's row (a closed day) fires the triggers that delete the day's totals and
    month sums: two multi-row transactions could each hold one of those and wait for the
    other's row, so such rows go one message per transaction, on the synchronous path."""
    today = timezone.now().date()
    return all(row.day >= today for row in merged)


def day_keys(merged: Sequence[RowDelta]) -> frozenset[int]:
    return frozenset(day_lock_key(row.chat_id, row.day) for row in merged)


def _server_side_binding(db: BaseDatabaseWrapper) -> bool:
    """Django binds on the server (one statement per query) only for the option set to True."""
    return db.settings_dict.get("OPTIONS", {}).get("server_side_binding") is True


def poison_failed(store: KVStore, merged: Sequence[RowDelta], exc: Exception) -> None:
    triples = touched(merged)
    log.warning("live stats write failed, marking %d categories poisoned: %s", len(triples), exc)
    _memo_forget(triples)
    # What the database missed first (readers repair the day from exactly these counters),
    # then the marks that say the day is not to be trusted.
    failed_record(store, [(r.chat_id, r.day, r.user_id, r.deltas) for r in merged])
    poison(store=store, triples=triples)


def _kv_in_database(store: KVStore) -> bool:
    """Whether the KV store writes through this connection (its commits join our transaction)."""
    return store.url == "db://"


def merge_rows(rows: Iterable[RowDelta]) -> list[RowDelta]:
    """One row per (chat, day, user), deltas summed, sorted by that key."""
    if isinstance(rows, Sequence) and len(rows) == 1:  # a message's one row: as it is
        (row,) = rows
        for column in row.deltas:
            if column not in COLUMN_CATEGORY:
                raise ValueError(f"unknown stats column {column!r}")
        return [row] if row.deltas else []
    merged: dict[tuple[int, date, int], dict[str, int]] = {}
    for row in rows:
        target = merged.setdefault((row.chat_id, row.day, row.user_id), {})
        for column, delta in row.deltas.items():
            if column not in COLUMN_CATEGORY:
                raise ValueError(f"unknown stats column {column!r}")
            target[column] = target.get(column, 0) + delta
    return [RowDelta(*key, deltas) for key, deltas in sorted(merged.items()) if deltas]


def _upsert_statement(rows: Sequence[RowDelta]) -> Statement:
    """``INSERT ... ON CONFLICT (chat_id, day, user_id) DO UPDATE SET c = c + excluded.c``."""
    columns = sorted({column for row in rows for column in row.deltas})
    now = timezone.now()
    placeholders = ", ".join(["(" + ", ".join(["%s"] * (len(columns) + 4)) + ")"] * len(rows))
    params: list[Any] = []
    for row in rows:
        params.extend([row.chat_id, row.day, row.user_id])
        params.extend(row.deltas.get(column, 0) for column in columns)
        params.append(now)
    updates = ", ".join(f"{c} = stats_daily_user.{c} + excluded.{c}" for c in columns)
    sql = (
        f"INSERT INTO stats_daily_user (chat_id, day, user_id, {', '.join(columns)}, updated_at) "  # noqa: S608 - column names from COLUMN_CATEGORY
        f"VALUES {placeholders} ON CONFLICT (chat_id, day, user_id) DO UPDATE SET {updates}, "
        "updated_at = excluded.updated_at"
    )
    return sql, params


def _upsert_arrays_statement(rows: Sequence[RowDelta]) -> Statement:
    """``_upsert_statement`` with the rows as one array per column (PostgreSQL), inserted in
    their (sorted) order."""
    columns = sorted({column for row in rows for column in row.deltas})
    values = [f"v{n}" for n in range(len(columns))]
    arrays = ", ".join(
        ["%s::bigint[]", "%s::date[]", "%s::bigint[]", *["%s::int[]"] * len(columns)]
    )
    updates = ", ".join(f"{c} = stats_daily_user.{c} + excluded.{c}" for c in columns)
    sql = (
        f"INSERT INTO stats_daily_user (chat_id, day, user_id, {', '.join(columns)}, updated_at) "  # noqa: S608 - column names from COLUMN_CATEGORY
        f"SELECT c, d, u, {', '.join(values)}, %s FROM unnest({arrays}) WITH ORDINALITY "
        f"AS t(c, d, u, {', '.join(values)}, n) ORDER BY n "
        f"ON CONFLICT (chat_id, day, user_id) DO UPDATE SET {updates}, "
        "updated_at = excluded.updated_at"
    )
    params: list[Any] = [
        timezone.now(),
        [row.chat_id for row in rows],
        [row.day for row in rows],
        [row.user_id for row in rows],
        *([row.deltas.get(column, 0) for row in rows] for column in columns),
    ]
    return sql, params


def poison(*, store: KVStore, triples: Sequence[tuple[int, date, str]]) -> None:
    """Mark (chat, day, category) poisoned: in the KV store first, then the coverage row."""
    at = int(time.time() * 1000)
    for chat_id, day, category in triples:
        try:
            poison_mark(store, chat_id, day, category, at)
        except StateError as exc:
            log.error("cannot record poisoned stats %s %s %s: %s", chat_id, day, category, exc)
    try:
        with transaction.atomic():
            _coverage_poisoned(triples, at)
    except DatabaseError as exc:
        log.warning("coverage not marked poisoned (the KV mark stays): %s", exc)


def coverage_live(triples: Sequence[tuple[int, date, str]]) -> None:
    """Mark (chat, day, category) ``triples`` live, as an add does (``stats.unsettled``)."""
    statement = _coverage_live_statement(triples)
    if statement is not None:
        with connection.cursor() as cursor:
            cursor.execute(*statement)
    memo_remember(triples)


def coverage_memo_clear() -> None:
    with _memo_lock:
        _memo.clear()


# --- coverage ------------------------------------------------------------------------------
_COVERAGE_LIVE = (
    "INSERT INTO stats_daily_coverage "
    "(chat_id, day, category, status, source, reason, updated_at) VALUES {values} "
    "ON CONFLICT (chat_id, day, category) DO UPDATE SET "
    "status = CASE WHEN stats_daily_coverage.status IN ('none', 'pending') THEN 'live' "
    "ELSE stats_daily_coverage.status END, source = 'live', updated_at = excluded.updated_at "
    "WHERE excluded.status = 'live' AND (stats_daily_coverage.status IN ('none', 'pending') "
    "OR stats_daily_coverage.source <> 'live')"
)
_COVERAGE_POISONED = (
    "INSERT INTO stats_daily_coverage "
    "(chat_id, day, category, status, source, reason, poisoned_at, updated_at) VALUES {values} "
    "ON CONFLICT (chat_id, day, category) DO UPDATE SET "
    "poisoned_at = excluded.poisoned_at, updated_at = excluded.updated_at"
)


def _coverage_live_statement(touched: Sequence[tuple[int, date, str]]) -> Statement | None:
    """Mark touched categories live (monotonic), and the day's other categories ``none``;
    None when this process knows them live already."""
    if _memo_known(touched):
        return None
    touched_set = set(touched)
    days = sorted({(chat_id, day) for chat_id, day, _ in touched})
    now = timezone.now()
    params: list[Any] = []
    for chat_id, day in days:
        for category in sorted(CATEGORIES):
            status = "live" if (chat_id, day, category) in touched_set else "none"
            params.extend([chat_id, day, category, status, "live", "", now])
    values = ", ".join(["(%s, %s, %s, %s, %s, %s, %s)"] * (len(params) // 7))
    return _COVERAGE_LIVE.format(values=values), params


def _coverage_poisoned(triples: Sequence[tuple[int, date, str]], at: int) -> None:
    now = timezone.now()
    params: list[Any] = []
    for chat_id, day, category in sorted(triples):
        params.extend([chat_id, day, category, "none", "live", "", at, now])
    values = ", ".join(["(%s, %s, %s, %s, %s, %s, %s, %s)"] * len(triples))
    with connection.cursor() as cursor:
        cursor.execute(_COVERAGE_POISONED.format(values=values), params)


# A process-local memo of (chat, day, category) known to be live already, so that a busy day
# costs one statement per message, not two. An entry ages out MEMO_SECONDS after it was
# remembered (the least recently used goes first when it is full), and the next message of it
# writes the coverage again and remembers it anew: one statement. A TTLCache is not
# thread-safe: every use holds the lock.
_memo: cachetools.TTLCache[tuple[int, date, str], bool] = cachetools.TTLCache(
    maxsize=MEMO_MAX, ttl=MEMO_SECONDS
)
_memo_lock = threading.Lock()


def _memo_known(triples: Iterable[tuple[int, date, str]]) -> bool:
    with _memo_lock:
        return all(triple in _memo for triple in triples)


def memo_lock_renew() -> None:
    """In a forked child: a new lock (a thread of the parent may have held the old one)."""
    global _memo_lock
    _memo_lock = threading.Lock()


def memo_remember(triples: Iterable[tuple[int, date, str]]) -> None:
    with _memo_lock:
        for triple in triples:
            if triple not in _memo:  # not renewed: a write costs more than a lookup
                _memo[triple] = True


def _memo_forget(triples: Iterable[tuple[int, date, str]]) -> None:
    with _memo_lock:
        for triple in triples:
            _memo.pop(triple, None)
