"""Statements of the update path sent straight on libpq (PostgreSQL): the live writer's two
round trips a group message, and the one ``DELETE`` of a private message.

Such a statement needs nothing of a cursor: no parameters to adapt (``render`` writes them in
as literals, and only values of the few kinds the callers make: integers, dates, times, their
own names, integer lists; anything else is refused, never quoted), no rows to read. Django's
cursor and psycopg's would cost more Python than the statement's own database work; libpq's
``PQexec`` (without the GIL while it waits) is one call. Django's execute wrappers still see
the statement, and its query log when it keeps one; errors come as Django's database errors.

``execute_unchecked`` also does without the health check Django makes on a request's first use
of a persistent connection (``CONN_HEALTH_CHECKS``: a ``SELECT 1`` round trip per request): a
reused connection that turned out dead (the server restarted) fails the statement instead, and
is replaced and the statement sent once more. That is for statements that may be sent twice: one
that opens its own transaction (nothing of it was committed when the connection was found
dead), or an idempotent one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import date, datetime
from functools import partial
from typing import Any

from django.db import InterfaceError, OperationalError
from django.db.backends.base.base import BaseDatabaseWrapper


def usable(db: BaseDatabaseWrapper) -> bool:
    """Whether statements may go straight on libpq and end their own transactions here:
    PostgreSQL with client-side binding, in autocommit outside any ``atomic`` block."""
    return (
        db.vendor == "postgresql"
        and not db.in_atomic_block
        and db.settings_dict.get("AUTOCOMMIT", True)
        and db.settings_dict.get("OPTIONS", {}).get("server_side_binding") is not True
    )


def execute(sql: str, db: BaseDatabaseWrapper) -> None:
    """Run ``sql`` (literals only: nothing is bound) as one simple query on ``db``."""
    if db.connection is None:
        db.ensure_connection()
    context = {"connection": db, "cursor": None}
    if db.execute_wrappers:
        executor: Callable[..., Any] = _execute_libpq
        for wrapper in reversed(db.execute_wrappers):
            executor = partial(wrapper, executor)
        executor(sql, None, False, context)
    else:
        _execute_libpq(sql, None, False, context)
    if db.queries_logged:
        db.queries_log.append({"sql": sql, "time": "0.000"})


def execute_unchecked(sql: str, db: BaseDatabaseWrapper) -> None:
    """``execute`` without the per-request health check (module docstring): a reused
    connection found dead is replaced and ``sql`` sent once more."""
    reused = db.connection is not None
    db.health_check_done = True  # type: ignore[attr-defined]  # Django 5.1+, not in the stubs
    try:
        execute(sql, db)
    except (OperationalError, InterfaceError):
        if not (reused and connection_broken(db)):
            raise
        db.close()
        execute(sql, db)


def _execute_libpq(sql: str, params: Any, many: bool, context: dict[str, Any]) -> None:
    from psycopg import errors as pg_errors
    from psycopg.pq import ConnStatus, ExecStatus

    db = context["connection"]
    raw = db.connection
    with db.wrap_database_errors:
        result = raw.pgconn.exec_(sql.encode())
        if result.status not in (ExecStatus.COMMAND_OK, ExecStatus.TUPLES_OK):
            if raw.pgconn.status == ConnStatus.BAD:
                message = raw.pgconn.error_message.decode(errors="replace").strip()
                raise pg_errors.OperationalError(f"the connection is lost: {message}")
            raise pg_errors.error_from_result(result, encoding=raw.info.encoding)


def connection_broken(db: BaseDatabaseWrapper) -> bool:
    raw = db.connection
    return raw is None or bool(raw.closed) or bool(getattr(raw, "broken", False))


_SAFE_TEXT = re.compile(r"[A-Za-z0-9_ .:-]*")


def literal(value: Any) -> str:
    """An SQL literal for the callers' values: integers, dates, times, and their own names
    (categories, statuses, table names' words); anything else is refused rather than quoted."""
    if type(value) is int:  # a negative one in parentheses: never "--", and binds before "::"
        return str(value) if value >= 0 else f"({value})"
    if isinstance(value, datetime):
        return f"'{value.isoformat()}'::timestamptz"
    if isinstance(value, date):
        return f"'{value.isoformat()}'::date"
    if isinstance(value, str) and _SAFE_TEXT.fullmatch(value):
        return f"'{value}'"
    if isinstance(value, list) and all(type(item) is int for item in value):
        return "'{" + ",".join(map(str, value)) + "}'"
    raise TypeError(f"no SQL literal for {type(value).__name__} {value!r:.40}")


def render(sql: str, params: Sequence[Any]) -> str:
    """``sql`` with each ``%s`` replaced by the literal of its parameter."""
    parts = sql.split("%s")
    if len(parts) != len(params) + 1:
        raise ValueError("placeholders and parameters differ")
    out = [parts[0]]
    # A statement of many rows repeats its dates and times: each is written out once (keyed
    # with its type and zone too: a date is not its midnight, 12:00 UTC not 13:00 +01:00).
    seen: dict[tuple[type, Any, Any], str] = {}
    for value, part in zip(params, parts[1:], strict=True):
        if type(value) is int and value >= 0:
            out += (str(value), part)
            continue
        key = (
            (type(value), value, getattr(value, "tzinfo", None))
            if isinstance(value, date)
            else None
        )
        text = seen.get(key) if key is not None else None
        if text is None:
            text = literal(value)
            if key is not None:
                seen[key] = text
        out += (text, part)
    return "".join(out)
