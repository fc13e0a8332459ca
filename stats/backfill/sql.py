"""The backfill's fenced statements.

Every write carries the fence ``EXISTS (state row with this job, version, revision and owner,
still running, lease not expired)`` both on the insert and on the conflict update, so a
worker that lost its lease writes nothing: the statement affects no row. Each upsert reports
whether it applied (row count 1) so the caller can tell a rejected write from a done one.
Values are absolute but never lower a cell (``col = GREATEST(col, excluded.col)``): writing a
slice twice gives the same result. The caller holds the days' locks exclusive, so every KV
increment is already in the database or, if its process died, in the KV store only: the KV
value is then the right one and never below the database's. A KV value below it means the KV
store lost data (a Redis that restarted empty): the database keeps what it has, and the
verification reports the day as not complete. Table and column names come from module
constants; every value is a bound parameter.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime, tzinfo
from typing import Any

from django.db import connection

from stats import verify
from stats.backfill.state import JOB_NAME, Lease
from stats.models import CATEGORIES
from stats.totals import day_totals_write

FENCE = (
    "EXISTS (SELECT 1 FROM stats_backfill_state WHERE job_name = %s AND version = %s "
    "AND revision = %s AND lease_owner = %s AND status = 'running' AND lease_expires_at > %s)"
)


class Fenced:
    """The fenced statements of one worker, executed on ``cursor`` at time ``now``."""

    def __init__(self, cursor: Any, lease: Lease | None, now: datetime) -> None:
        """``lease`` None: unfenced (the reconciliation, which holds no lease: it only ever
        writes under the days' exclusive lock what it has just read)."""
        self.cursor = cursor
        self.now = now
        if lease is None:
            self.fence_sql, self.fence = "1 = 1", []
        else:
            expires = connection.ops.adapt_datetimefield_value(now)
            self.fence_sql = FENCE
            self.fence = [JOB_NAME, lease.version, lease.revision, lease.owner, expires]

    def _upsert(self, sql: str, values: list[Any]) -> bool:
        sql = sql.replace("{FENCE}", self.fence_sql)
        self.cursor.execute(sql, [*values, *self.fence, *self.fence])
        return self.cursor.rowcount == 1

    def aggregate_put(
        self, chat_id: int, day: date, user_id: int, values: Mapping[str, int]
    ) -> bool:
        columns = sorted(values)
        greatest = "MAX" if connection.vendor == "sqlite" else "GREATEST"
        sql = (
            f"INSERT INTO stats_daily_user (chat_id, day, user_id, {', '.join(columns)}, "
            f"updated_at) SELECT %s, %s, %s, {', '.join(['%s'] * len(columns))}, %s "
            f"WHERE {{FENCE}} ON CONFLICT (chat_id, day, user_id) DO UPDATE SET "
            + ", ".join(
                f"{column} = {greatest}(stats_daily_user.{column}, excluded.{column})"
                for column in columns
            )
            + ", updated_at = excluded.updated_at WHERE {FENCE}"
        )
        return self._upsert(
            sql, [chat_id, day, user_id, *(values[column] for column in columns), self.now]
        )

    def coverage_rebuilt(self, chat_id: int, day: date, category: str, rebuilt_at: int) -> bool:
        """The backfill wrote this category of the day: pending unless live or complete."""
        sql = (
            "INSERT INTO stats_daily_coverage (chat_id, day, category, status, source, reason, "
            "rebuilt_at, updated_at) SELECT %s, %s, %s, 'pending', 'backfill', '', %s, %s "
            "WHERE {FENCE} ON CONFLICT (chat_id, day, category) DO UPDATE SET "
            "status = CASE WHEN stats_daily_coverage.status = 'none' THEN 'pending' "
            "ELSE stats_daily_coverage.status END, rebuilt_at = excluded.rebuilt_at, "
            "updated_at = excluded.updated_at WHERE {FENCE}"
        )
        return self._upsert(sql, [chat_id, day, category, rebuilt_at, self.now])

    def coverage_poison_import(self, chat_id: int, day: date, category: str, at: int) -> bool:
        """Copy a KV poison mark onto the coverage row (the later mark wins)."""
        sql = (
            "INSERT INTO stats_daily_coverage (chat_id, day, category, status, source, reason, "
            "poisoned_at, updated_at) SELECT %s, %s, %s, 'none', 'live', '', %s, %s "
            "WHERE {FENCE} ON CONFLICT (chat_id, day, category) DO UPDATE SET "
            "poisoned_at = CASE WHEN stats_daily_coverage.poisoned_at IS NULL "
            "OR stats_daily_coverage.poisoned_at < excluded.poisoned_at "
            "THEN excluded.poisoned_at ELSE stats_daily_coverage.poisoned_at END, "
            "updated_at = excluded.updated_at WHERE {FENCE}"
        )
        return self._upsert(sql, [chat_id, day, category, at, self.now])

    def profile_put(self, chat_id: int, user_id: int, name: str, username: str) -> bool:
        sql = (
            "INSERT INTO stats_chat_user_profile (chat_id, user_id, display_name, username, "
            "updated_at) SELECT %s, %s, %s, %s, %s WHERE {FENCE} "
            "ON CONFLICT (chat_id, user_id) DO UPDATE SET display_name = excluded.display_name, "
            "username = excluded.username, updated_at = excluded.updated_at WHERE {FENCE}"
        )
        return self._upsert(sql, [chat_id, user_id, name[:200], username[:64], self.now])

    def chat_put(self, chat_id: int, title: str, chat_type: str) -> bool:
        sql = (
            "INSERT INTO stats_chat (chat_id, title, chat_type, updated_at) "
            "SELECT %s, %s, %s, %s WHERE {FENCE} ON CONFLICT (chat_id) DO UPDATE SET "
            "title = excluded.title, chat_type = excluded.chat_type, "
            "updated_at = excluded.updated_at WHERE {FENCE}"
        )
        return self._upsert(sql, [chat_id, title[:255], chat_type[:20], self.now])

    def _execute(self, sql: str, values: list[Any]) -> int:
        """A fenced statement with the fence's parameters last; its row count."""
        self.cursor.execute(sql.replace("{FENCE}", self.fence_sql), [*values, *self.fence])
        return int(self.cursor.rowcount)

    def column_sums(self, chat_id: int, day: date) -> dict[str, int]:
        return verify.column_sums(self.cursor, chat_id, day)

    def day_complete(
        self, chat_id: int, day: date, verified_from: int, zone: tzinfo | None = None
    ) -> bool:
        """Every column verified: all six categories of the day are complete (rows created
        where missing), and a poison mark older than ``verified_from`` (the verification's
        start, less the clock skew allowed) is cleared: the numbers were checked after it. A
        category poisoned since stays as it was (not complete). The day's read totals are
        stored too (``stats.totals``; ``zone``: the chat's, else looked up): the rows were
        just verified and the lock keeps them."""
        now = self.now
        rows = [value for c in CATEGORIES for value in (chat_id, day, c, now)]
        self.cursor.execute(
            "INSERT INTO stats_daily_coverage (chat_id, day, category, status, source, reason, "  # noqa: S608 - placeholders only
            "updated_at) VALUES "
            + ", ".join(["(%s, %s, %s, 'pending', 'backfill', '', %s)"] * len(CATEGORIES))
            + " ON CONFLICT (chat_id, day, category) DO NOTHING",
            rows,
        )
        applied = self._execute(
            "UPDATE stats_daily_coverage SET status = CASE WHEN poisoned_at IS NULL "
            "OR poisoned_at < %s THEN 'complete' WHEN status = 'complete' THEN 'pending' "
            "ELSE status END, poisoned_at = CASE WHEN poisoned_at < %s THEN NULL "
            "ELSE poisoned_at END, reason = '', updated_at = %s "
            "WHERE chat_id = %s AND day = %s AND {FENCE}",
            [verified_from, verified_from, now, chat_id, day],
        )
        if applied:
            day_totals_write(self.cursor, chat_id, day, zone)
        return bool(applied)

    def day_not_complete(self, chat_id: int, day: date, reason: str) -> bool:
        """Verification failed: record why on the messages row; nothing of the day stays
        complete."""
        applied = self._upsert(
            "INSERT INTO stats_daily_coverage (chat_id, day, category, status, source, reason, "
            "updated_at) SELECT %s, %s, 'messages', 'pending', 'backfill', %s, %s "
            "WHERE {FENCE} ON CONFLICT (chat_id, day, category) DO UPDATE SET "
            "reason = excluded.reason, status = CASE WHEN stats_daily_coverage.status = "
            "'complete' THEN 'pending' ELSE stats_daily_coverage.status END, "
            "updated_at = excluded.updated_at WHERE {FENCE}",
            [chat_id, day, reason[:40], self.now],
        )
        self._execute(
            "UPDATE stats_daily_coverage SET status = 'pending', updated_at = %s "
            "WHERE chat_id = %s AND day = %s AND status = 'complete' "
            "AND category <> 'messages' AND {FENCE}",
            [self.now, chat_id, day],
        )
        return applied
