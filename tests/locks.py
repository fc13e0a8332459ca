"""Waiting, in a test, until another thread's statement waits for a lock."""

from __future__ import annotations

import threading
import time

from django.db import connection


def wait_until_waiting_for_a_lock(thread: threading.Thread, what: str = "it") -> None:
    """On PostgreSQL, until a session of this test database waits for a lock (a day's
    advisory lock, a row), or ``thread`` ended; on SQLite a writer holds the database's write
    lock, so the other can only wait: a head start, which correctness never depends on."""
    if connection.vendor != "postgresql":
        time.sleep(0.3)
        return
    deadline = time.monotonic() + 30
    with connection.cursor() as cursor:
        while thread.is_alive():
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND datname = current_database()"
            )
            if cursor.fetchone()[0]:
                return
            assert time.monotonic() < deadline, f"{what} never waited for the lock"
            time.sleep(0.01)
