"""The backfill's fenced statements.

Every write carries the fence ``EXISTS (state row with this job, version, revision and owner,
still running, lease not expired)`` both on the insert and on the conflict update, so a
worker that lost its lease writes nothing: the statement affects no row. Each upsert reports
whether it applied (row count 1) so the caller can tell a rejected write from a done one.
Values are absolute (``col = excluded.col``): writing a slice twice gives the same result.
Table and column names come from module constants; every value is a bound parameter.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime
from typing import Any

from django.db import connection

from stats.backfill.state import JOB_NAME, Lease

FENCE = (
    "EXISTS (SELECT 1 FROM stats_backfill_state WHERE job_name = %s AND version = %s "
    "AND revision = %s AND lease_owner = %s AND status = 'running' AND lease_expires_at > %s)"
)


class Fenced:
    """The fenced statements of one worker, executed on ``cursor`` at time ``now``."""

    def __init__(self, cursor: Any, lease: Lease, now: datetime) -> None:
        self.cursor = cursor
        self.now = now
        expires = connection.ops.adapt_datetimefield_value(now)
        self.fence = [JOB_NAME, lease.version, lease.revision, lease.owner, expires]

    def _upsert(self, sql: str, values: list[Any]) -> bool:
        self.cursor.execute(sql, [*values, *self.fence, *self.fence])
        return self.cursor.rowcount == 1

    def aggregate_put(
        self, chat_id: int, day: date, user_id: int, values: Mapping[str, int]
    ) -> bool:
        columns = sorted(values)
        sql = (
            f"INSERT INTO stats_daily_user (chat_id, day, user_id, {', '.join(columns)}, "
            f"updated_at) SELECT %s, %s, %s, {', '.join(['%s'] * len(columns))}, %s "
            f"WHERE {FENCE} ON CONFLICT (chat_id, day, user_id) DO UPDATE SET "
            + ", ".join(f"{column} = excluded.{column}" for column in columns)
            + f", updated_at = excluded.updated_at WHERE {FENCE}"
        )
        return self._upsert(
            sql, [chat_id, day, user_id, *(values[column] for column in columns), self.now]
        )

    def coverage_rebuilt(self, chat_id: int, day: date, category: str, rebuilt_at: int) -> bool:
        """The backfill wrote this category of the day: pending unless live or complete."""
        sql = (
            "INSERT INTO stats_daily_coverage (chat_id, day, category, status, source, reason, "
            f"rebuilt_at, updated_at) SELECT %s, %s, %s, 'pending', 'backfill', '', %s, %s "
            f"WHERE {FENCE} ON CONFLICT (chat_id, day, category) DO UPDATE SET "
            "status = CASE WHEN stats_daily_coverage.status = 'none' THEN 'pending' "
            "ELSE stats_daily_coverage.status END, rebuilt_at = excluded.rebuilt_at, "
            f"updated_at = excluded.updated_at WHERE {FENCE}"
        )
        return self._upsert(sql, [chat_id, day, category, rebuilt_at, self.now])

    def coverage_poison_import(self, chat_id: int, day: date, category: str, at: int) -> bool:
        """Copy a KV poison mark onto the coverage row (the later mark wins)."""
        sql = (
            "INSERT INTO stats_daily_coverage (chat_id, day, category, status, source, reason, "
            f"poisoned_at, updated_at) SELECT %s, %s, %s, 'none', 'live', '', %s, %s "
            f"WHERE {FENCE} ON CONFLICT (chat_id, day, category) DO UPDATE SET "
            "poisoned_at = CASE WHEN stats_daily_coverage.poisoned_at IS NULL "
            "OR stats_daily_coverage.poisoned_at < excluded.poisoned_at "
            "THEN excluded.poisoned_at ELSE stats_daily_coverage.poisoned_at END, "
            f"updated_at = excluded.updated_at WHERE {FENCE}"
        )
        return self._upsert(sql, [chat_id, day, category, at, self.now])

    def profile_put(self, chat_id: int, user_id: int, name: str, username: str) -> bool:
        sql = (
            "INSERT INTO stats_chat_user_profile (chat_id, user_id, display_name, username, "
            f"updated_at) SELECT %s, %s, %s, %s, %s WHERE {FENCE} "
            "ON CONFLICT (chat_id, user_id) DO UPDATE SET display_name = excluded.display_name, "
            f"username = excluded.username, updated_at = excluded.updated_at WHERE {FENCE}"
        )
        return self._upsert(sql, [chat_id, user_id, name[:200], username[:64], self.now])

    def chat_put(self, chat_id: int, title: str, chat_type: str) -> bool:
        sql = (
            "INSERT INTO stats_chat (chat_id, title, chat_type, updated_at) "
            f"SELECT %s, %s, %s, %s WHERE {FENCE} ON CONFLICT (chat_id) DO UPDATE SET "
            "title = excluded.title, chat_type = excluded.chat_type, "
            f"updated_at = excluded.updated_at WHERE {FENCE}"
        )
        return self._upsert(sql, [chat_id, title[:255], chat_type[:20], self.now])

    def message_sum(self, chat_id: int, day: date) -> int:
        self.cursor.execute(
            "SELECT COALESCE(SUM(message_count), 0) FROM stats_daily_user "
            "WHERE chat_id = %s AND day = %s",
            [chat_id, day],
        )
        return int(self.cursor.fetchone()[0])

    def day_complete(self, chat_id: int, day: date) -> None:
        """Parity passed: every category of the day is complete, and a poison mark older than
        the phase that rebuilt the category is cleared. A category poisoned since stays so."""
        self.cursor.execute(
            "UPDATE stats_daily_coverage SET status = 'complete', reason = '', "  # noqa: S608
            "poisoned_at = NULL, updated_at = %s WHERE chat_id = %s AND day = %s AND "
            "(poisoned_at IS NULL OR (rebuilt_at IS NOT NULL AND poisoned_at < rebuilt_at)) "
            f"AND {FENCE}",
            [self.now, chat_id, day, *self.fence],
        )

    def day_not_complete(self, chat_id: int, day: date, reason: str) -> bool:
        """Parity failed: record why on the messages row; nothing of the day stays complete."""
        applied = self._upsert(
            "INSERT INTO stats_daily_coverage (chat_id, day, category, status, source, reason, "
            f"updated_at) SELECT %s, %s, 'messages', 'pending', 'backfill', %s, %s "
            f"WHERE {FENCE} ON CONFLICT (chat_id, day, category) DO UPDATE SET "
            "reason = excluded.reason, status = CASE WHEN stats_daily_coverage.status = "
            "'complete' THEN 'pending' ELSE stats_daily_coverage.status END, "
            f"updated_at = excluded.updated_at WHERE {FENCE}",
            [chat_id, day, reason, self.now],
        )
        self.cursor.execute(
            "UPDATE stats_daily_coverage SET status = 'pending', updated_at = %s "  # noqa: S608
            "WHERE chat_id = %s AND day = %s AND status = 'complete' "
            f"AND category <> 'messages' AND {FENCE}",
            [self.now, chat_id, day, *self.fence],
        )
        return applied
