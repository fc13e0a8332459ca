"""Verifying one (chat, day): every column the product shows against its KV daily total.

The KV commit of each counted message adds every column to the chat's daily total
(``activity:{chat}:{day}`` for messages, ``stats:total:{chat}:{day}:{column}`` for the rest), so
the database's ``SUM(column)`` over the day's rows must equal it, column by column. Finalize
and the reconciliation compare them while holding the day's lock EXCLUSIVE (``stats.daylock``):
no live write is half-done then, so a difference is real (a lost add, a poisoned write, a
KV store that lost data), never a write in flight.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from typing import Any

from stats import keys
from telegram_bot.state import KVStore

# message_count first: its verdicts keep their names (missing_activity_total, ...).
VERIFIED_COLUMNS: tuple[str, ...] = tuple(keys.COLUMN_CATEGORY)
TOTAL_READS = len(VERIFIED_COLUMNS)
# A day verified in a batch: its totals and its recheck mark (``stats.reconcile``).
DAY_READS = TOTAL_READS + 1


def read_totals(store: KVStore, chat_id: int, day: date) -> dict[str, int | None]:
    """The day's KV totals, one get per column (None: no such key)."""
    totals: dict[str, int | None] = {}
    for column in VERIFIED_COLUMNS:
        value = store.get(keys.total_key(column, chat_id, day))
        totals[column] = value if isinstance(value, int) and not isinstance(value, bool) else None
    return totals


def read_totals_many(
    store: KVStore, days: list[tuple[int, date]]
) -> list[tuple[dict[str, int | None], Any]]:
    """``read_totals`` of every (chat, day) of ``days``, in order, each with the day's recheck
    mark as read (``stats.reconcile``), with ``get_many`` calls of at most 1,000 keys
    (``DAY_READS`` reads a day)."""
    wanted = []
    for chat_id, day in days:
        wanted += [keys.total_key(column, chat_id, day) for column in VERIFIED_COLUMNS]
        wanted.append(keys.recheck_key(chat_id, day))
    values = store.get_each(wanted)
    read = []
    for n in range(len(days)):
        day_values = values[n * DAY_READS : (n + 1) * DAY_READS]
        totals = {
            column: value if isinstance(value, int) and not isinstance(value, bool) else None
            for column, value in zip(VERIFIED_COLUMNS, day_values, strict=False)
        }
        read.append((totals, day_values[-1]))
    return read


def column_sums(cursor: Any, chat_id: int, day: date) -> dict[str, int]:
    """``SUM(column)`` of the day's rows in ``stats_daily_user``, every column, one query."""
    select = ", ".join(f"COALESCE(SUM({column}), 0)" for column in VERIFIED_COLUMNS)
    cursor.execute(
        f"SELECT {select} FROM stats_daily_user WHERE chat_id = %s AND day = %s",  # noqa: S608 - column names are constants
        [chat_id, day],
    )
    row = cursor.fetchone()
    return {column: int(value) for column, value in zip(VERIFIED_COLUMNS, row, strict=True)}


def verdict(sums: Mapping[str, int], totals: Mapping[str, int | None]) -> str:
    """ "" when every column equals its total and the day has messages; else why not:
    ``missing_activity_total`` or ``<column>_mismatch`` (the first column that differs)."""
    if not totals.get("message_count"):
        return "missing_activity_total"
    for column in VERIFIED_COLUMNS:
        if sums.get(column, 0) != (totals.get(column) or 0):
            return f"{column}_mismatch"
    return ""
