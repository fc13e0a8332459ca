"""Reconciliation: re-verify, within minutes, the closed days that received late messages.

A message for a closed day (or one that closes within ``STATS_LATE_MARGIN_SECONDS``) leaves
a late marker ``stats:late:{chat}:{day}:{user}`` and bumps the flag ``stats:late`` in its
KV commit, atomically with its counters. If the process dies before the database add, the
marker is there although the database never got the increment; a day already verified would
otherwise stay verified and wrong until its counters expire.

Every minute (schedule ``stats_reconcile``), ``reconcile_run``:

0. settles the counted messages whose KV commit's outcome was unknown (``stats.unsettled``:
   one query when there are none);
1. reads the flag; if it equals ``stats:late_seen`` (the value the last complete pass ended
   with) there is nothing to do: one get, no scan (on Redis a scan walks the whole keyspace);
2. otherwise scans the markers, and for at most ``STATS_RECONCILE_MAX_DAYS`` (20) closed days,
   oldest first, under the day's lock EXCLUSIVE (``stats.daylock``; no live write is half-done
   then): verifies every column of the day against its KV total (``stats.verify``); for the
   columns that differ, rewrites them in the marked members' rows from their counters (never
   lowering a cell, like the backfill) and verifies again. Equal: the day is complete
   (verified). Not equal: the day is reopened
   (nothing of it stays complete, the reason is recorded), so the dashboard and the API stop
   calling it verified; the backfill's next rebuild or a later marker may verify it again;
3. retires the markers it handled (compare-and-set, so a marker written again meanwhile
   stays) and, when no marker of a closed day is left, records the flag value it started from.

Until a verification has seen a late message, its day is not served as verified: see
``stats.recheck`` (the day's recheck mark, read here under the day's lock and retired once the
verification committed).

Cost per run: one query and 2 gets when nothing was late or unsettled; else one scan of the
markers plus, per day, 34 gets for its totals and one for its recheck mark, one lock and a few
statements, and, only for a day that disagrees, one get per marked member and differing column.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from stats import keys, member_months, totals, verify
from stats.backfill.slices import skew_ms
from stats.backfill.sql import Fenced
from stats.backfill.state import now_ms
from stats.daylock import lock_days
from stats.recheck import rechecks_done
from stats.unsettled import unsettled_settle
from telegram_bot.state import KVStore, get_store

log = logging.getLogger(__name__)

RETIRED_TTL_MS = 60_000


@dataclass(frozen=True)
class ReconcileReport:
    outcome: str  # "idle" (nothing late since the last pass), "done", "more" (days left)
    days: int = 0
    verified: int = 0
    reopened: int = 0
    settled: int = 0  # counts of unknown outcome settled (``stats.unsettled``)


def max_days() -> int:
    return max(1, settings.STATS_RECONCILE_MAX_DAYS)


def reconcile_run(
    *, store: KVStore | None = None, today: date | None = None, limit: int | None = None
) -> ReconcileReport:
    """One bounded pass over the late markers (module docstring)."""
    store = store or get_store()
    today = today or datetime.now(UTC).date()
    limit = limit or max_days()
    settled = unsettled_settle(store=store, today=today)
    flag = store.get(keys.LATE_FLAG)
    if flag is None or flag == store.get(keys.LATE_SEEN):
        return ReconcileReport("idle", settled=settled)
    marked: dict[tuple[int, date], dict[int, object]] = {}
    open_days = False
    for key in store.scan_all(keys.LATE):
        parsed = keys.parse_late_key(key)
        value = store.get(key) if parsed else None
        if parsed is None or not (isinstance(value, dict) and "at" in value):
            continue  # a retired marker, or not a marker
        chat_id, day, user_id = parsed
        if day >= today:
            open_days = True  # marked within the margin before midnight: after it closes
            continue
        marked.setdefault((chat_id, day), {})[user_id] = value
    todo = sorted(marked, key=lambda pair: (pair[1], pair[0]))
    verified = reopened = 0
    for chat_id, day in todo[:limit]:
        users = marked[(chat_id, day)]
        complete, recheck = reconcile_day(store, chat_id, day, sorted(users))
        rechecks_done(store, [(chat_id, day, recheck)])
        if complete:
            verified += 1
            # The late write dropped the member sums of a closed month: store them again.
            member_months.months_after_verified([(chat_id, day)], today)
            # It dropped the next day's read totals too (that day's first hours may belong
            # to this local day): stored again when that day is verified and unchanged.
            totals.totals_fill(only=[(chat_id, day + timedelta(days=1))])
        else:
            reopened += 1
        for user_id, value in users.items():
            store.compare_and_set(
                keys.late_key(chat_id, day, user_id), value, {"retired": True}, RETIRED_TTL_MS
            )
    left = len(todo) > limit
    if not left and not open_days:
        store.set(keys.LATE_SEEN, flag)
    return ReconcileReport(
        "more" if left else "done", min(len(todo), limit), verified, reopened, settled
    )


def reconcile_day(store: KVStore, chat_id: int, day: date, user_ids: list[int]) -> tuple[bool, Any]:
    """Verify one closed day under its exclusive lock; where a column disagrees with its total,
    rewrite that column of the marked members' rows from their counters (never lowering a
    cell) and verify again. Returns whether the day is verified complete, and its recheck
    mark as read under the lock (for ``rechecks_done`` once this has committed).

    The usual case (the late messages' adds all went through) costs the day's 34 total reads,
    its recheck mark and one query, however many members are marked."""
    with transaction.atomic(), connection.cursor() as cursor:
        lock_days([(chat_id, day)], shared=False)
        verified_from = now_ms() - skew_ms()
        writer = Fenced(cursor, None, timezone.now())
        recheck = store.get(keys.recheck_key(chat_id, day))
        totals = verify.read_totals(store, chat_id, day)
        sums = writer.column_sums(chat_id, day)
        differ = [c for c in verify.VERIFIED_COLUMNS if sums[c] != (totals[c] or 0)]
        if differ:
            for user_id in user_ids:
                values = {}
                for column in differ:
                    value = store.get(keys.column_key(column, chat_id, day, user_id))
                    if isinstance(value, int) and not isinstance(value, bool):
                        values[column] = value
                if values:
                    writer.aggregate_put(chat_id, day, user_id, values)
            sums = writer.column_sums(chat_id, day)
        reason = verify.verdict(sums, totals)
        if reason:
            writer.day_not_complete(chat_id, day, reason)
            log.warning("stats day %s %s reopened by the reconciliation: %s", chat_id, day, reason)
            return False, recheck
        writer.day_complete(chat_id, day, verified_from)
        return True, recheck
