"""The suite runs within one UTC day.

Many tests take "today" once (a module's ``TODAY``, a seeded week ending today) and the product
takes it again when it serves them; a run that crosses UTC midnight sees two different days and
fails on a correct product (CI did, at 00:00:32). A run that would start within ``WINDOW`` of
midnight first waits until the new day has begun. ``TEST_MIDNIGHT_GUARD=0`` turns the wait off.
"""

from __future__ import annotations

import os
import sys
import time
from datetime import UTC, datetime, timedelta

WINDOW = timedelta(minutes=15)  # longer than one run of the suite on two cores
AFTER = timedelta(seconds=2)  # into the new day, past any clock skew with the database


def seconds_to_wait(now: datetime, window: timedelta = WINDOW) -> float:
    """How long a run starting at ``now`` (aware) waits: 0, or until just after UTC midnight."""
    now = now.astimezone(UTC)
    midnight = datetime(now.year, now.month, now.day, tzinfo=UTC) + timedelta(days=1)
    if midnight - now > window:
        return 0.0
    return (midnight + AFTER - now).total_seconds()


def wait_for_one_day() -> None:
    if os.environ.get("TEST_MIDNIGHT_GUARD", "1") == "0":
        return
    wait = seconds_to_wait(datetime.now(UTC))
    if wait:
        print(
            f"UTC midnight is {wait:.0f} s away; the suite waits for the new day so that every "
            "test sees one date (TEST_MIDNIGHT_GUARD=0 skips the wait)",
            file=sys.stderr,
            flush=True,
        )
        time.sleep(wait)
