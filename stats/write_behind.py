"""Write-behind of the live writer's database add: one transaction per process and epoch.

On PostgreSQL with the KV store elsewhere (Redis), a counted message does not wait for its own
database transaction. Each web (or worker) process keeps one open transaction, an *epoch*, on
a connection of its own; the epoch holds the SHARED day locks (``stats.daylock``) of the days
its messages count on. A message joins the current epoch (its days must be locked by it: a day
not yet locked is tried with ``pg_try_advisory_xact_lock_shared``), runs its KV commit, and
hands the epoch its rows if the commit applied; the request answers then. A flusher thread
ends the epoch every ``STATS_WRITE_BEHIND_MS`` milliseconds: it opens the next epoch (which
tries the same days' locks at once, so that messages go on without a round trip), waits for
the messages still in their KV commit, and writes all the rows of the epoch in ONE additive
upsert (plus coverage) and ``COMMIT``, in one round trip.

Why the ordering of ``stats.live_writer`` still holds (ARCHITECTURE.md, Stats): a message's KV
commit runs while its epoch holds the day's shared lock, and the epoch commits only after
every such commit came back, with exactly the rows of the commits that applied. So an
exclusive holder (the backfill, finalize, the reconciliation) sees each increment in both
stores, or, when the process died before its epoch committed, in the KV store only: the
state of a writer killed between its two writes, which the backfill rewrites once the day is
closed. A process that dies loses at most one epoch of adds that way (those
were already answered); a graceful exit (gunicorn's TERM: ``atexit``; a worker cluster's
process: its multiprocessing finalizers) writes them first.

Only today's rows (UTC) go to the epochs; a late message's row, of a closed day, is written on
the synchronous path: such a write fires the triggers that delete the day's totals and month
sums, and two multi-row transactions could each hold one of those rows and wait for a row of
the other. (A row whose day closed, by the database's clock, before its epoch began fires
them too: near midnight, or with the application's clock behind. The epoch holds that day's
lock, which finalize needs to store the day's totals, so unless the clocks are apart by more
than the time to verify the day there are none yet: the triggers delete and lock nothing.)

The epochs' connections are psycopg connections opened from ``settings.DATABASES`` (psycopg's
documented ``connect``), not Django's: a Django connection belongs to the thread that opened it,
while an epoch is joined by the request threads and written by the flusher, and psycopg
connections may be shared by threads. Their statements bind their values client-side
(``psycopg.ClientCursor``), so that one query carries several statements: the locks with
``BEGIN``, the upserts with ``COMMIT``.

No deadlock: the epoch never waits for a day lock (it only *tries* them) and waits only for row
locks of today's rows, taken sorted like every writer's, which fire no trigger; a day it could
not lock
(an exclusive holder has it, or waits for it) is counted on the synchronous path of
``live_writer``, which waits in its own transaction holding nothing else. Rows are written
sorted, like every other writer's. A database that fails an epoch poisons its rows, as a
failed synchronous add does; after a connection that cannot be opened, the synchronous path is
used for a second.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import multiprocessing.util
import os
import threading
import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import psycopg
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections

from telegram_bot.processes import this_pid

if TYPE_CHECKING:
    from stats.live_writer import RowDelta
    from telegram_bot.state import KVStore

log = logging.getLogger(__name__)

# An epoch that holds this many rows is written at once, before its interval is up.
MAX_ROWS = 2000
# After a connection could not be opened, the synchronous path for this long.
RETRY_OPEN_SECONDS = 1.0


class EpochError(Exception):
    """The epoch's connection failed: its transaction (and its rows) are lost."""


class _Epoch:
    __slots__ = ("conn", "failed", "in_flight", "locked", "pending", "rows", "used", "waited")

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.locked: set[int] = set()
        self.used: set[int] = set()  # the days its messages counted on
        self.pending: list[tuple[KVStore, Sequence[RowDelta]]] = []
        self.rows = 0
        self.in_flight = 0
        self.waited = False  # the flusher waits for its last message (``leave`` wakes it)
        self.failed: Exception | None = None


class WriteBehind:
    """The epochs of one process (``module docstring``); ``get()`` gives the process's one."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._mutex = threading.Lock()
        self._members_done = threading.Condition(self._mutex)
        self._flushing = threading.Lock()
        self._wake = threading.Event()
        self._current: _Epoch | None = None
        self._retiring: list[_Epoch] = []
        self._spare: list[Any] = []
        self._retry_open_at = 0.0
        self._closed = False
        self._thread: threading.Thread | None = None

    # --- the messages' side ------------------------------------------------------------------
    def join(self, keys: frozenset[int]) -> _Epoch | None:
        """The current epoch, holding the shared locks of ``keys``, counted as in flight until
        ``leave``; None when it cannot hold them (count synchronously then)."""
        with self._mutex:
            if self._closed:
                return None
            self._start_flusher()
            epoch = self._current
            if epoch is None:
                if time.monotonic() < self._retry_open_at:
                    return None
                epoch = self._open(keys)
                if epoch is None:
                    return None
                self._current = epoch
            elif not keys <= epoch.locked:
                try:
                    epoch.locked |= _try_lock(epoch.conn, keys - epoch.locked)
                except EpochError as exc:
                    epoch.failed = exc
                    self._retire_current()
                    return None
            if not keys <= epoch.locked:
                return None  # an exclusive holder has (or waits for) one of the days
            epoch.used |= keys
            epoch.in_flight += 1
            return epoch

    def leave(self, epoch: _Epoch, store: KVStore, rows: Sequence[RowDelta] | None) -> None:
        """The message's KV commit came back: ``rows`` if it applied, else None."""
        with self._mutex:
            if rows:
                epoch.pending.append((store, rows))
                epoch.rows += len(rows)
            epoch.in_flight -= 1
            if epoch.in_flight == 0 and epoch.waited:
                self._members_done.notify_all()
            if epoch.rows >= MAX_ROWS:
                self._wake.set()

    # --- the flusher's side ------------------------------------------------------------------
    def flush(self, *, reopen: bool = False) -> None:
        """End the current epoch now: write its rows and commit (``reopen``: the flusher's
        turn, which opens the next epoch first, on the same days)."""
        with self._flushing:
            with self._mutex:
                epoch = self._current
                if epoch is not None:
                    idle = not epoch.pending and not epoch.in_flight
                    self._current = None
                    if reopen and not idle and not self._closed:
                        # Only the days still in use: a day that went quiet is let go.
                        self._current = self._open(frozenset(epoch.used))
                    self._retiring.append(epoch)
                retiring, self._retiring = self._retiring, []
                for ending in retiring:
                    while ending.in_flight:
                        ending.waited = True
                        self._members_done.wait()
            for ending in retiring:
                try:
                    self._finish(ending)
                except Exception as exc:  # its rows are neither written nor poisoned yet
                    log.exception("stats write-behind: an epoch failed unexpectedly")
                    _close(ending.conn)
                    try:
                        self._poison(ending, exc)
                    except Exception:  # the next epochs must still be ended
                        log.exception("stats write-behind: an epoch's rows not poisoned")

    def close(self) -> None:
        """Write what is pending and stop taking messages (the process exits)."""
        with self._mutex:
            self._closed = True
        self._wake.set()  # the flusher stops
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(5)
        self.flush()
        with self._mutex:
            spare, self._spare = self._spare, []
        for conn in spare:
            _close(conn)

    def _start_flusher(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="stats-write-behind", daemon=True
            )
            self._thread.start()

    def _run(self) -> None:
        while not self._closed:
            self._wake.wait(self.interval)
            self._wake.clear()
            try:
                self.flush(reopen=True)
            except Exception:  # the loop must go on: the next epoch is not this one
                log.exception("stats write-behind: an epoch could not be ended")

    def _retire_current(self) -> None:
        if self._current is not None:
            self._retiring.append(self._current)
            self._current = None
            self._wake.set()

    def _open(self, keys: Iterable[int]) -> _Epoch | None:
        """A new epoch (BEGIN, and the shared locks of ``keys`` that can be had at once);
        None if the database cannot be reached. Under the mutex."""
        spare = self._spare.pop() if self._spare else None
        if spare is not None:
            try:
                return self._begin(spare, keys)
            except Exception:  # it died while idle (a server restart): a new one
                _close(spare)
        conn = None
        try:
            conn = _connect()
            return self._begin(conn, keys)
        except Exception as exc:
            if conn is not None:
                _close(conn)
            self._retry_open_at = time.monotonic() + RETRY_OPEN_SECONDS
            log.warning("stats write-behind: no epoch (%s); counting synchronously", exc)
            return None

    @staticmethod
    def _begin(conn: Any, keys: Iterable[int]) -> _Epoch:
        epoch = _Epoch(conn)
        epoch.locked = _try_lock(conn, keys, begin=True)
        return epoch

    def _finish(self, epoch: _Epoch) -> None:
        """Write the epoch's rows and commit, or roll back an empty one; a failure poisons the
        rows (``live_writer``), as a failed synchronous add does."""
        from stats import live_writer

        merged = live_writer.merge_rows(row for _, rows in epoch.pending for row in rows)
        touched = live_writer.touched(merged)
        if epoch.failed is None:
            try:
                if merged:
                    statements = live_writer.add_statements(merged, touched, arrays=True)
                    _execute(
                        epoch.conn,
                        "; ".join([*(sql for sql, _ in statements), "COMMIT"]),
                        [param for _, params in statements for param in params],
                    )
                else:
                    _execute(epoch.conn, "ROLLBACK")
            except EpochError as exc:
                epoch.failed = exc
        if epoch.failed is not None:
            _close(epoch.conn)
            self._poison(epoch, epoch.failed)
            return
        live_writer.memo_remember(touched)
        with self._mutex:
            if len(self._spare) < 2 and not self._closed:
                self._spare.append(epoch.conn)
                return
        _close(epoch.conn)

    @staticmethod
    def _poison(epoch: _Epoch, exc: Exception) -> None:
        from stats import live_writer

        by_store: dict[int, tuple[KVStore, list[RowDelta]]] = {}
        for store, rows in epoch.pending:
            by_store.setdefault(id(store), (store, []))[1].extend(rows)
        try:
            for store, rows in by_store.values():
                live_writer.poison_failed(store, live_writer.merge_rows(rows), exc)
        finally:
            connections[DEFAULT_DB_ALIAS].close()  # the flusher thread's own, if poison used it


def _connect() -> psycopg.Connection[Any]:
    """A connection to the default database, in autocommit (the epochs send their own
    ``BEGIN``), its statements bound client-side."""
    return psycopg.connect(
        **connect_params(settings.DATABASES[DEFAULT_DB_ALIAS]),
        autocommit=True,
        cursor_factory=psycopg.ClientCursor,
    )


# Options of a Django DATABASES entry that are Django's, not libpq's.
_DJANGO_OPTIONS = frozenset(
    {"assume_role", "isolation_level", "pool", "server_side_binding", "cursor_factory",
     "context", "prepare_threshold"}
)  # fmt: skip


def connect_params(database: dict[str, Any]) -> dict[str, Any]:
    """The libpq connection parameters of a Django ``DATABASES`` entry (PostgreSQL), as
    Django's backend passes them: ``NAME``, ``USER``, ``PASSWORD``, ``HOST`` and ``PORT`` when
    set, and the entry's ``OPTIONS`` but Django's own."""
    params = {k: v for k, v in (database.get("OPTIONS") or {}).items() if k not in _DJANGO_OPTIONS}
    name = database.get("NAME")
    if name:
        params["dbname"] = name
    elif name is None:  # Django's way of naming the server's default database
        params.pop("service", None)
        params["dbname"] = "postgres"
    for key, param in (("USER", "user"), ("PASSWORD", "password"), ("HOST", "host"),
                       ("PORT", "port")):  # fmt: skip
        if database.get(key):
            params[param] = database[key]
    params["client_encoding"] = "UTF8"
    return params


def _close(conn: Any) -> None:
    with contextlib.suppress(Exception):  # it is being thrown away
        conn.close()


def _execute(conn: psycopg.Connection[Any], sql: str, params: Sequence[Any] = ()) -> list[Any]:
    """One query on the epoch's connection (its statements run in order, their values bound
    client-side); the rows of its last statement that returns rows."""
    try:
        with conn.cursor() as cursor:
            cursor.execute(sql, params or None)
            rows: list[Any] = []
            while True:  # a result per statement
                if cursor.description is not None:
                    rows = cursor.fetchall()
                if not cursor.nextset():
                    return rows
    except psycopg.Error as exc:
        raise EpochError(str(exc).strip() or type(exc).__name__) from exc


def _try_lock(
    conn: psycopg.Connection[Any], keys: Iterable[int], *, begin: bool = False
) -> set[int]:
    """The keys of ``keys`` whose shared day lock the epoch's transaction got at once."""
    wanted = sorted(keys)
    from stats.live_writer import ASYNC_COMMIT

    statements = ["BEGIN", ASYNC_COMMIT] if begin else []
    if wanted:
        statements.append(
            "SELECT k FROM unnest(%s::bigint[]) AS t(k) WHERE pg_try_advisory_xact_lock_shared(k)"
        )
    if not statements:
        return set()
    rows = _execute(conn, "; ".join(statements), [wanted] if wanted else ())
    return {int(row[0]) for row in rows} if wanted else set()


# --- the process's one ---------------------------------------------------------------------------
_instance: WriteBehind | None = None
_instance_pid = 0
_instance_lock = threading.Lock()
_inherited: list[WriteBehind] = []


_exited = False


def get() -> WriteBehind | None:
    """This process's write-behind, or None when ``STATS_WRITE_BEHIND_MS`` is 0 or the
    process is exiting (a message counted then waits for its own add)."""
    global _instance, _instance_pid
    if _exited:
        return None
    interval = settings.STATS_WRITE_BEHIND_MS / 1000
    instance = _instance
    if instance is not None and _instance_pid == this_pid() and instance.interval == interval:
        return instance
    with _instance_lock:
        if _instance is not None and _instance_pid == os.getpid():
            if _instance.interval == interval:
                return _instance
            _instance.close()  # the setting changed (tests): write what the old one holds
        _instance = WriteBehind(interval) if interval > 0 else None
        if _instance_pid != os.getpid():
            # A multiprocessing child (the worker cluster's) runs its finalizers, not atexit.
            multiprocessing.util.Finalize(None, at_exit, exitpriority=100)
        _instance_pid = os.getpid()
        return _instance


def flush() -> None:
    """Write this process's pending adds now (tests, and before a process exits)."""
    instance = _instance
    if instance is not None and _instance_pid == os.getpid():
        instance.flush()


def shutdown() -> None:
    global _instance
    with _instance_lock:
        instance, _instance = _instance, None
    if instance is not None and _instance_pid == os.getpid():
        instance.close()


def at_exit() -> None:
    """The process exits: write what is pending, and let no new epoch start."""
    global _exited
    _exited = True
    shutdown()


def _after_fork_in_child() -> None:
    # The parent's epochs, connections and lock (perhaps held by another thread at the fork)
    # are not the child's: it starts with none.
    # Kept referenced, never closed here: closing a connection sends the server a goodbye on
    # the socket the parent still uses.
    global _instance, _instance_lock, _instance_pid
    if _instance is not None:
        _inherited.append(_instance)
    _instance, _instance_pid, _instance_lock = None, 0, threading.Lock()
    from stats import live_writer

    live_writer.memo_lock_renew()  # the flusher may have held it


atexit.register(at_exit)
os.register_at_fork(after_in_child=_after_fork_in_child)
