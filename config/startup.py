"""Process start: read ``.env``, and turn a configuration error into one line on stderr and
exit code 2."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from config.env import ConfigError, load_env_file

T = TypeVar("T")
DEFAULT_ENV_FILE = Path(__file__).resolve().parent.parent / ".env"
# Read by libraries that test whether the variable exists, not whether it is empty:
# prometheus-client would write its files into the current directory for an empty one.
PRESENCE_READ = ("PROMETHEUS_MULTIPROC_DIR",)


def load_environment() -> None:
    """Read ``.env`` (or ``ENV_FILE``) into ``os.environ``; every entry point calls this first.

    The test settings do not: the suite never depends on a developer's ``.env``.
    """
    run_or_exit(lambda: load_env_file(DEFAULT_ENV_FILE))
    for name in PRESENCE_READ:
        if not os.environ.get(name, "").strip():
            os.environ.pop(name, None)


def run_or_exit(entry: Callable[[], T]) -> T:
    try:
        return entry()
    except ConfigError as exc:
        sys.stderr.write(f"configuration error: {exc}\n")
        raise SystemExit(2) from None


def check_services() -> None:
    """Stop with one line on stderr and exit code 2 when the database or Redis the settings
    name does not answer (a closed port, a missing database): what a start-up against them
    would otherwise show as a long traceback, or as a server that starts and whose workers
    then die. The connections it opens are closed again (before a server forks its workers)."""
    problem = unreachable_service()
    if problem is not None:
        _stop(problem)


def explain_failure() -> None:
    """Call while handling a command's exception: when the database or Redis does not answer
    (the likely cause), stop with the one line of ``check_services`` instead of the
    traceback; otherwise return, and the caller re-raises. ``manage.py`` does this for every
    command, so ``migrate`` and the rest need no check of their own and pay nothing when the
    backends answer."""
    try:
        problem = unreachable_service()
    except Exception:  # the command's own error is the one to show
        return
    if problem is not None:
        _stop(problem)


def unreachable_service() -> str | None:
    """``"<SETTING>: <what failed>"`` for the first of the database and Redis that does not
    answer, else None. Needs the settings loaded, not the app registry."""
    from django.conf import settings
    from django.db import Error as DatabaseError
    from django.db import connection

    try:
        connection.ensure_connection()  # a connection, not a query: the apps may not be loaded
    except DatabaseError as exc:
        return f"DATABASE_URL: cannot use the database: {_one_line(exc)}"
    finally:
        connection.close()
    if settings.REDIS_URL:
        from telegram_bot.errors import StateError
        from telegram_bot.state import open_store

        store = open_store(settings.REDIS_URL)
        try:
            store.ping()
        except StateError as exc:
            return f"REDIS_URL: cannot use Redis: {_one_line(exc)}"
        finally:
            store.close()
    return None


def _one_line(exc: BaseException) -> str:
    """The error's text on one line (psycopg's span several, with a hint on the last)."""
    return " ".join(str(exc).split()) or type(exc).__name__


def _stop(problem: str) -> None:
    sys.stderr.write(f"start-up error: {problem}\n")
    raise SystemExit(2) from None
