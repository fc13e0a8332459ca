"""The per-(chat, day) lock that orders the live writer against the backfill and reconciler.

The live writer takes the lock SHARED before its KV commit and holds it until its database
add has committed (or rolled back); the backfill's slices and the reconciliation take it
EXCLUSIVE before they read counters and hold it until their writes commit. So a writer that
holds it exclusively never sees a counter increment whose database add is still to come: each
increment is either in both stores or, when its process died between the two writes, in the
KV store only (never the other way round). Live writers do not wait for each other.

It is a transaction lock: call inside ``transaction.atomic()``; it goes with the transaction
(commit, rollback, or the connection dropping when a process is killed).

- PostgreSQL: ``pg_advisory_xact_lock_shared`` / ``pg_advisory_xact_lock`` on a 64-bit hash of
  (chat, day), taken in key order so that two lockers never wait for each other in a cycle (a
  hash collision only makes two days share a lock).
- SQLite: one writer at a time for the whole database; a write statement takes the database's
  write lock for the rest of the transaction (``transaction_mode`` IMMEDIATE takes it at BEGIN
  already), so shared and exclusive are the same lock there.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable
from datetime import date
from typing import Any

from django.db import connection

_NAMESPACE = b"tgcp-stats-day:"


@functools.lru_cache(maxsize=4096)  # every counted message asks for its day's key
def day_lock_key(chat_id: int, day: date) -> int:
    """A stable signed 64-bit key for (chat, day), the same in every process."""
    digest = hashlib.blake2b(
        _NAMESPACE + f"{chat_id}:{day.isoformat()}".encode(), digest_size=8
    ).digest()
    return int.from_bytes(digest, "big", signed=True)


def lock_days(pairs: Iterable[tuple[int, date]], *, shared: bool) -> None:
    """Lock the days of ``pairs`` until the current transaction ends."""
    if not connection.in_atomic_block:
        raise RuntimeError("lock_days needs a transaction (transaction.atomic)")
    statement = lock_statement(pairs, shared=shared)
    if statement is not None:
        with connection.cursor() as cursor:
            cursor.execute(*statement)


def lock_statement(
    pairs: Iterable[tuple[int, date]], *, shared: bool
) -> tuple[str, list[Any]] | None:
    """The SQL and parameters that lock the days of ``pairs`` (None for no day), to run in a
    transaction; the live writer sends it together with its add."""
    lock_keys = sorted({day_lock_key(chat_id, day) for chat_id, day in pairs})
    if not lock_keys:
        return None
    if connection.vendor == "postgresql":
        function = "pg_advisory_xact_lock_shared" if shared else "pg_advisory_xact_lock"
        if len(lock_keys) == 1:  # a message's one day: a plain call, less for the server to plan
            # In parentheses: a client-side bound negative value is written ``-n``, and
            # ``-n::bigint`` casts n first (out of range for the smallest key, -2**63).
            return f"SELECT {function}((%s)::bigint)", lock_keys
        return (
            f"SELECT {function}(k) FROM unnest(%s::bigint[]) WITH ORDINALITY AS t(k, n) "  # noqa: S608 - a constant name
            "ORDER BY n",
            [lock_keys],
        )
    if connection.vendor == "sqlite":
        # Matches no row but is a write: SQLite takes its write lock for the transaction.
        return "UPDATE stats_backfill_state SET revision = revision WHERE 0", []
    raise RuntimeError(f"no day lock for the {connection.vendor} database")
