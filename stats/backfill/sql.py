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

The backfill's slices write each table's rows in one statement (``*_many``): on PostgreSQL the
rows travel as one array per column (``unnest ... WITH ORDINALITY``, inserted in the order
given, so row locks are taken in the caller's sorted order, like the live writer's); on SQLite
as ``VALUES`` in chunks that stay under its parameter limit. Such a statement applies to every
row or, fenced out, to none: its row count tells which. The counters' upsert
(``counters_put``) leaves out the rows that would not change, so its row count cannot tell: it
returns the fence's verdict from the same statement instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date, datetime, tzinfo
from typing import Any

from django.db import connection

from stats import verify
from stats.backfill.state import JOB_NAME, Lease
from stats.models import CATEGORIES
from stats.totals import day_totals_write

COLUMNS = frozenset(verify.VERIFIED_COLUMNS)
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

    def counters_put(self, cells: Sequence[tuple[int, date, int, str, int]]) -> bool:
        """Write counter values ``cells`` (chat, day, user, column, value): each cell becomes
        ``GREATEST(cell, value)``, a missing row is inserted (its other cells 0). Return whether
        they applied: all of them, or (fenced out) none.

        PostgreSQL: one statement. The cells travel as five arrays (one element a counter, not
        a row by column), are gathered into rows by (chat, day, user), and rows whose every cell
        already holds at least its value are left out before the upsert: they would not change,
        and an upsert of an existing row writes a new version of it (its indexes, its trigger)
        even then. A backfill run after the first finds most rows unchanged; the base and words
        phases find so the rows whose counters the hours phase read along.
        The rows are upserted in (chat, day, user) order, like the live writer's."""
        if not cells:
            return True
        columns = sorted({cell[3] for cell in cells})
        if not set(columns) <= COLUMNS:
            raise ValueError(f"unknown stats columns {sorted(set(columns) - COLUMNS)}")
        if connection.vendor != "postgresql":
            return self._counters_put_rows(columns, cells)
        index = {column: n for n, column in enumerate(columns)}
        pivot = ", ".join(
            f"max(s.c4) FILTER (WHERE s.c3 = {n}) AS v{n}" for n in range(len(columns))
        )
        changed = " OR ".join(f"d.{column} < v.v{n}" for n, column in enumerate(columns))
        names = ", ".join(columns)
        values = ", ".join(f"COALESCE(v.v{n}, 0)" for n in range(len(columns)))
        # Column names checked against COLUMNS; every value is a parameter.
        sql = (
            f"WITH fence AS (SELECT {self.fence_sql} AS ok), "  # noqa: S608
            f"v AS (SELECT s.c0, s.c1, s.c2, {pivot} FROM unnest(%s::bigint[], %s::date[], "
            "%s::bigint[], %s::int[], %s::bigint[]) AS s(c0, c1, c2, c3, c4) "
            "GROUP BY s.c0, s.c1, s.c2), "
            f"put AS (INSERT INTO stats_daily_user (chat_id, day, user_id, {names}, updated_at) "
            f"SELECT v.c0, v.c1, v.c2, {values}, %s FROM v LEFT JOIN stats_daily_user d "
            "ON d.chat_id = v.c0 AND d.day = v.c1 AND d.user_id = v.c2 "
            f"WHERE (SELECT ok FROM fence) AND (d.id IS NULL OR {changed}) "
            "ORDER BY v.c0, v.c1, v.c2 "
            "ON CONFLICT (chat_id, day, user_id) DO UPDATE SET "
            + ", ".join(
                f"{column} = GREATEST(stats_daily_user.{column}, excluded.{column})"
                for column in columns
            )
            + ", updated_at = excluded.updated_at RETURNING 1) "
            "SELECT (SELECT ok FROM fence), (SELECT count(*) FROM put)"
        )
        arrays = [  # lists: psycopg binds them as arrays
            [cell[0] for cell in cells],
            [cell[1] for cell in cells],
            [cell[2] for cell in cells],
            [index[cell[3]] for cell in cells],
            [cell[4] for cell in cells],
        ]
        self.cursor.execute(sql, [*self.fence, *arrays, self.now])
        ok, _written = self.cursor.fetchone()
        return bool(ok)

    def _counters_put_rows(
        self, columns: list[str], cells: Sequence[tuple[int, date, int, str, int]]
    ) -> bool:
        """``counters_put`` on SQLite: every row upserted, in chunks of ``VALUES``."""
        by_row: dict[tuple[int, date, int], dict[str, int]] = {}
        for chat_id, day, user_id, column, value in cells:
            row = by_row.setdefault((chat_id, day, user_id), {})
            row[column] = max(value, row.get(column, value))
        rows = [(*row, *(v.get(c) for c in columns)) for row, v in sorted(by_row.items())]
        names = ", ".join(columns)
        values = ", ".join(f"COALESCE(s.c{3 + n}, 0)" for n in range(len(columns)))
        sql = (
            f"INSERT INTO stats_daily_user (chat_id, day, user_id, {names}, updated_at) "  # noqa: S608
            f"SELECT s.c0, s.c1, s.c2, {values}, %s FROM {{ROWS}} WHERE {{FENCE}}{{ORDER}} "
            "ON CONFLICT (chat_id, day, user_id) DO UPDATE SET "
            + ", ".join(
                f"{column} = MAX(stats_daily_user.{column}, excluded.{column})"
                for column in columns
            )
            + ", updated_at = excluded.updated_at WHERE {FENCE}"
        )
        types = ("bigint", "date", "bigint", *("bigint" for _ in columns))
        return self._upsert_many(sql, types, rows, [self.now]) == len(rows)

    def coverage_rebuilt_many(
        self, triples: Sequence[tuple[int, date, str]], rebuilt_at: int
    ) -> int:
        """``coverage_rebuilt`` for every (chat, day, category); the rows applied."""
        sql = (
            "INSERT INTO stats_daily_coverage (chat_id, day, category, status, source, reason, "
            "rebuilt_at, updated_at) SELECT s.c0, s.c1, s.c2, 'pending', 'backfill', '', %s, %s "
            "FROM {ROWS} WHERE {FENCE}{ORDER} ON CONFLICT (chat_id, day, category) DO UPDATE SET "
            "status = CASE WHEN stats_daily_coverage.status = 'none' THEN 'pending' "
            "ELSE stats_daily_coverage.status END, rebuilt_at = excluded.rebuilt_at, "
            "updated_at = excluded.updated_at WHERE {FENCE}"
        )
        return self._upsert_many(sql, ("bigint", "date", "text"), triples, [rebuilt_at, self.now])

    def profiles_put(self, profiles: Sequence[tuple[int, int, str, str]]) -> int:
        """``profile_put`` for every (chat, user, name, username); the rows applied."""
        sql = (
            "INSERT INTO stats_chat_user_profile (chat_id, user_id, display_name, username, "
            "updated_at) SELECT s.c0, s.c1, s.c2, s.c3, %s FROM {ROWS} WHERE {FENCE}{ORDER} "
            "ON CONFLICT (chat_id, user_id) DO UPDATE SET display_name = excluded.display_name, "
            "username = excluded.username, updated_at = excluded.updated_at WHERE {FENCE}"
        )
        rows = [(c, u, name[:200], username[:64]) for c, u, name, username in profiles]
        return self._upsert_many(sql, ("bigint", "bigint", "text", "text"), rows, [self.now])

    def chats_put(self, chats: Sequence[tuple[int, str, str]]) -> int:
        """``chat_put`` for every (chat, title, type); the rows applied."""
        sql = (
            "INSERT INTO stats_chat (chat_id, title, chat_type, updated_at) "
            "SELECT s.c0, s.c1, s.c2, %s FROM {ROWS} WHERE {FENCE}{ORDER} "
            "ON CONFLICT (chat_id) DO UPDATE SET title = excluded.title, "
            "chat_type = excluded.chat_type, updated_at = excluded.updated_at WHERE {FENCE}"
        )
        rows = [(c, title[:255], chat_type[:20]) for c, title, chat_type in chats]
        return self._upsert_many(sql, ("bigint", "text", "text"), rows, [self.now])

    def _upsert_many(
        self,
        sql: str,
        types: Sequence[str],
        rows: Sequence[Sequence[Any]],
        params: Sequence[Any],
    ) -> int:
        """Run ``sql`` over ``rows``: an upsert that selects from ``{ROWS}`` (the rows, as
        ``s`` with columns c0, c1...), with ``params`` for its own placeholders before it,
        ``{FENCE}`` twice and ``{ORDER}``. One statement on PostgreSQL, chunks on SQLite.
        Returns the rows applied."""
        if not rows:
            return 0
        sql = sql.replace("{FENCE}", self.fence_sql)
        names = ", ".join(f"c{n}" for n in range(len(types)))
        if connection.vendor == "postgresql":
            arrays = ", ".join(f"%s::{kind}[]" for kind in types)
            source = f"unnest({arrays}) WITH ORDINALITY AS s({names}, n)"
            columns = [[row[n] for row in rows] for n in range(len(types))]  # bound as arrays
            self.cursor.execute(
                sql.replace("{ROWS}", source).replace("{ORDER}", " ORDER BY s.n"),
                [*params, *columns, *self.fence, *self.fence],
            )
            return int(self.cursor.rowcount)
        # SQLite: at most 999 parameters a statement on older builds.
        chunk = max(1, (900 - len(params) - 2 * len(self.fence)) // len(types))
        renamed = ", ".join(f"column{n + 1} AS c{n}" for n in range(len(types)))
        row_sql = "(" + ", ".join(["%s"] * len(types)) + ")"
        applied = 0
        for start in range(0, len(rows), chunk):
            part = rows[start : start + chunk]
            values = ", ".join([row_sql] * len(part))
            source = f"(SELECT {renamed} FROM (VALUES {values})) AS s"  # noqa: S608
            self.cursor.execute(
                sql.replace("{ROWS}", source).replace("{ORDER}", ""),
                [*params, *(v for row in part for v in row), *self.fence, *self.fence],
            )
            applied += int(self.cursor.rowcount)
        return applied

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
