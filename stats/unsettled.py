"""Counted messages whose KV commit's outcome is unknown, settled from the counters.

A KV commit (the counters with the update's done-marker, ``live_writer.count_once``) that was
sent and got no answer (``StateOutcomeUnknownError``: a Redis that hung past the socket
timeout) may still run: a hung Redis runs what waits in its sockets when it resumes. The update
is answered 503, and its re-delivery either finds the done-marker (the commit ran: "duplicate",
and nothing else would add it to the database) or counts it itself (it did not run). So its rows
are neither added nor dropped: ``unsettled_record`` keeps (chat, day, user, columns) in
``stats_unsettled`` (the database answers when the KV store does not), and the reconciliation
(``stats.reconcile``, every minute) settles them once the store answers again. Under the day's
EXCLUSIVE lock (no live write half-done, ``stats.daylock``) each recorded cell becomes
``GREATEST(cell, its KV counter)``, the backfill's rule: the message is added once if its commit
ran, and nothing changes if it did not (the re-delivery counted it in both stores, or nobody
did). Never twice.

Ordering: the counters are read after the answer to a ``PING`` sent once the record was read,
so after the commit was sent: a resumed Redis serves what waited in its sockets (the commit) in
its first turn, before any command sent after it answered again, and a Redis killed while hung
lost the commit with its process. Records of a day that closed meanwhile are dropped: a message
counted for a closed day wrote a late marker with its counters, which the reconciliation
handles, and finalize verifies every day against its KV totals.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import date
from typing import TYPE_CHECKING

from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from stats import keys
from stats.backfill.sql import Fenced
from stats.daylock import lock_days
from stats.models import UnsettledCount
from telegram_bot.state import KVStore

if TYPE_CHECKING:
    from stats.live_writer import RowDelta

log = logging.getLogger(__name__)

SETTLE_MAX = 1000  # records a run


def unsettled_record(rows: Sequence[RowDelta]) -> None:
    """Keep ``rows``, whose KV commit's outcome is unknown, for ``unsettled_settle``. Never
    raises: a database that fails too leaves the day short until finalize verifies it."""
    records = [
        UnsettledCount(chat_id=r.chat_id, day=r.day, user_id=r.user_id, columns=sorted(r.deltas))
        for r in rows
    ]
    try:
        UnsettledCount.objects.bulk_create(records)
    except DatabaseError as exc:
        log.error("stats: a count of unknown outcome not recorded (%d rows): %s", len(rows), exc)
        return
    log.warning("stats: the KV commit of %d rows did not answer; to settle", len(rows))


def unsettled_settle(*, store: KVStore, today: date, limit: int = SETTLE_MAX) -> int:
    """Settle the oldest recorded counts (module docstring); returns how many records went.
    Raises StateUnavailableError while the store does not answer (they stay)."""
    records = list(UnsettledCount.objects.order_by("id")[:limit])
    if not records:
        return 0
    store.ping()  # the counters are read after its answer (Ordering)
    days: dict[tuple[int, date], list[UnsettledCount]] = {}
    for record in records:
        days.setdefault((record.chat_id, record.day), []).append(record)
    for (chat_id, day), group in sorted(days.items(), key=lambda item: (item[0][1], item[0][0])):
        with transaction.atomic():
            if day >= today:
                _settle_day(store, chat_id, day, group)
            UnsettledCount.objects.filter(id__in=[record.id for record in group]).delete()
    return len(records)


def _settle_day(store: KVStore, chat_id: int, day: date, group: list[UnsettledCount]) -> None:
    """Every recorded cell of the day raised to its counter, under the day's exclusive lock
    (call in a transaction)."""
    from stats.live_writer import coverage_live

    lock_days([(chat_id, day)], shared=False)
    cells = sorted({(r.user_id, c) for r in group for c in r.columns if c in keys.COLUMN_CATEGORY})
    values = store.get_each([keys.column_key(c, chat_id, day, user_id) for user_id, c in cells])
    put = [
        (chat_id, day, user_id, column, value)
        for (user_id, column), value in zip(cells, values, strict=True)
        if isinstance(value, int) and not isinstance(value, bool)
    ]
    if not put:
        return
    with connection.cursor() as cursor:
        Fenced(cursor, None, timezone.now()).counters_put(put)
    coverage_live(sorted({(chat_id, day, keys.COLUMN_CATEGORY[cell[3]]) for cell in put}))
