"""Database backend: the ``kv_store`` table, for the embedded default (no Redis).

Each operation is one SQL statement, so it is atomic across processes: upserts with
``ON CONFLICT`` (SQLite 3.35+ and PostgreSQL), conditional ``UPDATE`` with a row-count check.
Expiry is lazy (every read filters on ``expires_at``) plus a scheduled purge. Inside a caller's
``transaction.atomic`` block the statements join that transaction.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import (
    DatabaseError,
    DataError,
    InterfaceError,
    OperationalError,
    connections,
    transaction,
)

from telegram_bot.errors import StateError, StateUnavailableError
from telegram_bot.state.base import (
    KVStore,
    RawFinish,
    RawOp,
    merged_text,
    met_trigger,
    prefix_successor,
)

TABLE = "kv_store"
_LIVE = "(expires_at IS NULL OR expires_at > %s)"
_EXPIRED = f"({TABLE}.expires_at IS NOT NULL AND {TABLE}.expires_at <= %s)"
_UPSERT = (
    f'INSERT INTO {TABLE} ("key", "value", expires_at) VALUES (%s, %s, %s) '
    'ON CONFLICT ("key") DO UPDATE SET "value" = excluded."value", '
    "expires_at = excluded.expires_at"
)
_INCREMENT = {
    "postgresql": (
        f'INSERT INTO {TABLE} ("key", "value", expires_at) VALUES (%s, %s, %s) '
        'ON CONFLICT ("key") DO UPDATE SET '
        f'"value" = CASE WHEN {_EXPIRED} THEN excluded."value" '
        f'ELSE CAST(CAST({TABLE}."value" AS BIGINT) + %s AS TEXT) END, '
        f"expires_at = CASE WHEN {_EXPIRED} THEN excluded.expires_at ELSE {TABLE}.expires_at END "
        f"WHERE {_EXPIRED} OR {TABLE}.\"value\" ~ '^-?[0-9]{{1,18}}$' "
        'RETURNING "value"'
    ),
    "sqlite": (
        f'INSERT INTO {TABLE} ("key", "value", expires_at) VALUES (%s, %s, %s) '
        'ON CONFLICT ("key") DO UPDATE SET '
        f'"value" = CASE WHEN {_EXPIRED} THEN excluded."value" '
        f'ELSE CAST(CAST({TABLE}."value" AS INTEGER) + %s AS TEXT) END, '
        f"expires_at = CASE WHEN {_EXPIRED} THEN excluded.expires_at ELSE {TABLE}.expires_at END "
        f'WHERE {_EXPIRED} OR {TABLE}."value" = CAST(CAST({TABLE}."value" AS INTEGER) AS TEXT) '
        'RETURNING "value"'
    ),
}

_FOR_UPDATE = {"postgresql": " FOR UPDATE"}  # SQLite: a write transaction is exclusive anyway


def _now_ms() -> int:
    return int(time.time() * 1000)


def _expiry(ttl_ms: int | None, now: int) -> int | None:
    return None if ttl_ms is None else now + ttl_ms


class DatabaseStore(KVStore):
    """KV state in a table of the Django database named by ``alias``."""

    def __init__(self, *, alias: str = "default", prefix: str = "", bot: int | None = None) -> None:
        super().__init__(prefix=prefix, bot=bot)
        self.alias = alias
        self.url = "db://" if alias == "default" else f"db://{alias}"

    @contextmanager
    def _cursor(self) -> Iterator[Any]:
        try:
            with connections[self.alias].cursor() as cursor:
                yield cursor
        except (OperationalError, InterfaceError) as exc:
            raise StateUnavailableError(f"database KV store unavailable: {exc}") from exc
        except DataError as exc:
            raise StateError(f"database KV store refused the value: {exc}") from exc
        except DatabaseError as exc:
            raise StateError(f"database KV store error: {exc}") from exc

    def _get(self, raw_key: str) -> str | None:
        with self._cursor() as cursor:
            cursor.execute(
                f'SELECT "value" FROM {TABLE} WHERE "key" = %s AND {_LIVE}', [raw_key, _now_ms()]
            )
            row = cursor.fetchone()
        return None if row is None else row[0]

    def _get_many(self, raw_keys: list[str]) -> list[str | None]:
        marks = ", ".join(["%s"] * len(raw_keys))
        with self._cursor() as cursor:
            cursor.execute(
                f'SELECT "key", "value" FROM {TABLE} WHERE "key" IN ({marks}) AND {_LIVE}',
                [*raw_keys, _now_ms()],
            )
            found = dict(cursor.fetchall())
        return [found.get(raw_key) for raw_key in raw_keys]

    def _set(self, raw_key: str, text: str, ttl_ms: int | None) -> None:
        with self._cursor() as cursor:
            cursor.execute(_UPSERT, [raw_key, text, _expiry(ttl_ms, _now_ms())])

    def _delete(self, raw_key: str) -> None:
        with self._cursor() as cursor:
            cursor.execute(f'DELETE FROM {TABLE} WHERE "key" = %s', [raw_key])

    def _delete_if_equal(self, raw_key: str, expected: str) -> bool:
        with self._cursor() as cursor:
            cursor.execute(
                f'DELETE FROM {TABLE} WHERE "key" = %s AND "value" = %s AND {_LIVE}',
                [raw_key, expected, _now_ms()],
            )
            return cursor.rowcount == 1

    def _set_if_absent(self, raw_key: str, text: str, ttl_ms: int | None) -> bool:
        now = _now_ms()
        with self._cursor() as cursor:
            cursor.execute(
                f"{_UPSERT} WHERE {_EXPIRED}", [raw_key, text, _expiry(ttl_ms, now), now]
            )
            return cursor.rowcount == 1

    def _replace_if_equal(self, raw_key: str, expected: str, text: str, ttl_ms: int | None) -> bool:
        now = _now_ms()
        with self._cursor() as cursor:
            cursor.execute(
                f'UPDATE {TABLE} SET "value" = %s, expires_at = %s '
                f'WHERE "key" = %s AND "value" = %s AND {_LIVE}',
                [text, _expiry(ttl_ms, now), raw_key, expected, now],
            )
            return cursor.rowcount == 1

    def _increment(self, raw_key: str, by: int, ttl_ms: int | None) -> int:
        now = _now_ms()
        vendor = connections[self.alias].vendor
        sql = _INCREMENT.get(vendor)
        if sql is None:
            raise StateError(f"database KV store does not support {vendor}")
        with self._cursor() as cursor:
            cursor.execute(sql, [raw_key, str(by), _expiry(ttl_ms, now), now, by, now, now])
            row = cursor.fetchone()
        if row is None:
            raise StateError(f"cannot increment {raw_key!r}: it does not hold an integer")
        return int(row[0])

    def _set_if_absent_and_increment(
        self,
        raw_key: str,
        text: str,
        ttl_ms: int | None,
        ops: list[RawOp],
        raw_absent: str | None = None,
    ) -> list[int] | None:
        now = _now_ms()
        vendor = connections[self.alias].vendor
        if vendor not in _INCREMENT:
            raise StateError(f"database KV store does not support {vendor}")
        values = []
        try:
            with transaction.atomic(using=self.alias), self._cursor() as cursor:
                cursor.execute(
                    f"{_UPSERT} WHERE {_EXPIRED}", [raw_key, text, _expiry(ttl_ms, now), now]
                )
                if cursor.rowcount != 1:
                    return None
                if raw_absent is not None and self._live_in(cursor, raw_absent, now):
                    transaction.set_rollback(True, using=self.alias)
                    return None
                for op in ops:
                    params = [op.key, op.arg, _expiry(op.ttl_ms, now), now, int(op.arg), now, now]
                    cursor.execute(_INCREMENT[vendor], params)
                    row = cursor.fetchone()
                    if row is None:
                        raise _NotAnIntegerError(op.key)
                    values.append(int(row[0]))
        except _NotAnIntegerError as exc:
            raise StateError(f"cannot increment {exc}: it does not hold an integer") from None
        return values

    def _claim_or_finish(self, step: RawFinish) -> tuple[bool, list[int]] | None:
        now = _now_ms()
        vendor = connections[self.alias].vendor
        if vendor not in _INCREMENT:
            raise StateError(f"database KV store does not support {vendor}")
        try:
            with transaction.atomic(using=self.alias), self._cursor() as cursor:
                # The key first: its row lock makes a concurrent claimant wait, then find it.
                cursor.execute(
                    f"{_UPSERT} WHERE {_EXPIRED}",
                    [step.key, step.claim, _expiry(step.claim_ttl_ms, now), now],
                )
                if cursor.rowcount != 1:
                    return None
                if step.done_key != step.key and self._live_in(cursor, step.done_key, now):
                    transaction.set_rollback(True, using=self.alias)
                    return None
                if step.marker is not None:
                    cursor.execute(
                        f'SELECT 1 FROM {TABLE} WHERE "key" = %s AND "value" = %s AND {_LIVE}',
                        [step.marker, step.done, now],
                    )
                    if cursor.fetchone() is not None:
                        transaction.set_rollback(True, using=self.alias)
                        return None
                values = [self._add(cursor, vendor, op, now) for op in step.increments]
                if met_trigger(values, step.triggers):
                    return False, values
                for op in step.ops:
                    if op.kind == "s":
                        cursor.execute(_UPSERT, [op.key, op.arg, _expiry(op.ttl_ms, now)])
                    else:
                        self._add(cursor, vendor, op, now)
                done_expiry = _expiry(step.done_ttl_ms, now)
                if step.done_key != step.key:  # the claim written above is not kept
                    cursor.execute(f'DELETE FROM {TABLE} WHERE "key" = %s', [step.key])
                for key in (step.marker if step.write_marker else None, step.done_key):
                    if key is not None:
                        cursor.execute(_UPSERT, [key, step.done, done_expiry])
        except _NotAnIntegerError as exc:
            raise StateError(f"cannot increment {exc}: it does not hold an integer") from None
        return True, values

    @staticmethod
    def _live_in(cursor: Any, raw_key: str, now: int) -> bool:
        """Whether ``raw_key`` holds a live value, read in the caller's transaction."""
        cursor.execute(f'SELECT 1 FROM {TABLE} WHERE "key" = %s AND {_LIVE}', [raw_key, now])
        return cursor.fetchone() is not None

    @staticmethod
    def _add(cursor: Any, vendor: str, op: RawOp, now: int) -> int:
        """One increment in the caller's transaction; raises _NotAnIntegerError to roll it
        back when the key holds no integer."""
        params = [op.key, op.arg, _expiry(op.ttl_ms, now), now, int(op.arg), now, now]
        cursor.execute(_INCREMENT[vendor], params)
        row = cursor.fetchone()
        if row is None:
            raise _NotAnIntegerError(op.key)
        return int(row[0])

    def _scan(
        self, raw_prefix: str, cursor: str | None, limit: int
    ) -> tuple[list[str], str | None]:
        lower_op, lower = (">", self._raw(cursor)) if cursor else (">=", raw_prefix)
        with self._cursor() as db_cursor:
            db_cursor.execute(
                f'SELECT "key" FROM {TABLE} WHERE "key" {lower_op} %s AND "key" < %s '
                f'AND {_LIVE} ORDER BY "key" LIMIT %s',
                [lower, prefix_successor(raw_prefix), _now_ms(), limit],
            )
            page = [row[0] for row in db_cursor.fetchall()]
        next_cursor = self._logical(page[-1]) if len(page) == limit else None
        return page, next_cursor

    def _raw_page(
        self, raw_prefix: str, cursor: str | None, limit: int
    ) -> tuple[list[str], str | None]:
        where, params = ('"key" > %s', [cursor]) if cursor else ('"key" >= %s', [raw_prefix])
        if raw_prefix:
            where, params = f'{where} AND "key" < %s', [*params, prefix_successor(raw_prefix)]
        with self._cursor() as db_cursor:
            db_cursor.execute(
                f'SELECT "key" FROM {TABLE} WHERE {where} AND {_LIVE} ORDER BY "key" LIMIT %s',
                [*params, _now_ms(), limit],
            )
            page = [row[0] for row in db_cursor.fetchall()]
        return page, page[-1] if len(page) == limit else None

    def _move(self, raw_from: str, raw_to: str) -> int:
        now = _now_ms()
        lock = _FOR_UPDATE.get(connections[self.alias].vendor, "")
        read = f'SELECT "value", expires_at FROM {TABLE} WHERE "key" = %s AND {_LIVE}{lock}'
        with transaction.atomic(using=self.alias), self._cursor() as cursor:
            cursor.execute(read, [raw_from, now])
            old = cursor.fetchone()
            if old is None:
                return 0
            cursor.execute(f'DELETE FROM {TABLE} WHERE "key" = %s', [raw_from])
            # Taken only where absent (or expired): a writer that created the new key
            # meanwhile has committed when this returns no row, and its value is merged.
            cursor.execute(f"{_UPSERT} WHERE {_EXPIRED}", [raw_to, old[0], old[1], now])
            if cursor.rowcount == 1:
                return 1
            cursor.execute(read, [raw_to, now])
            new = cursor.fetchone() or old  # expired in the meantime: as if absent
            if new is old:
                cursor.execute(_UPSERT, [raw_to, old[0], old[1]])
                return 1
            longer = None if old[1] is None or new[1] is None else max(old[1], new[1])
            cursor.execute(_UPSERT, [raw_to, merged_text(old[0], new[0]), longer])
            return 2

    def _apply_once(
        self, raw_marker: str, marker_text: str, marker_ttl_ms: int | None, ops: list[RawOp]
    ) -> bool:
        now = _now_ms()
        vendor = connections[self.alias].vendor
        try:
            with transaction.atomic(using=self.alias), self._cursor() as cursor:
                # Taking the marker first locks its row: a concurrent duplicate waits here,
                # then finds the marker set and changes nothing.
                cursor.execute(
                    f'{_UPSERT} WHERE NOT ({TABLE}."value" = %s AND '
                    f"({TABLE}.expires_at IS NULL OR {TABLE}.expires_at > %s))",
                    [raw_marker, marker_text, _expiry(marker_ttl_ms, now), marker_text, now],
                )
                if cursor.rowcount != 1:
                    return False
                for op in ops:
                    expires = _expiry(op.ttl_ms, now)
                    if op.kind == "s":
                        cursor.execute(_UPSERT, [op.key, op.arg, expires])
                        continue
                    params = [op.key, op.arg, expires, now, int(op.arg), now, now]
                    cursor.execute(_INCREMENT[vendor], params)
                    if cursor.fetchone() is None:
                        raise _NotAnIntegerError(op.key)
        except _NotAnIntegerError as exc:
            raise StateError(f"cannot increment {exc}: it does not hold an integer") from None
        return True

    def _ping(self) -> None:
        with self._cursor() as cursor:
            cursor.execute(f"SELECT 1 FROM {TABLE} LIMIT 1")

    def purge_expired(self, batch: int = 5000) -> int:
        """Delete expired rows in batches of ``batch``; return how many were deleted."""
        total = 0
        while True:
            now = _now_ms()
            with self._cursor() as cursor:
                cursor.execute(
                    # The outer condition again: a row revived meanwhile must survive.
                    f'DELETE FROM {TABLE} WHERE "key" IN (SELECT "key" FROM {TABLE} '
                    "WHERE expires_at <= %s LIMIT %s) AND expires_at <= %s",
                    [now, batch, now],
                )
                deleted = cursor.rowcount
            total += deleted
            if deleted < batch:
                return total


class _NotAnIntegerError(Exception):
    """Raised inside the transaction to roll it back."""
