"""django-q2 entry points of the stats app. Thin: the job keeps its own lease and state."""

from __future__ import annotations

from stats.backfill import backfill_run
from stats.member_months import month_fill
from stats.reconcile import reconcile_run

# The schedule fires every minute; the cluster's timeout is 120 s.
TICK_SECONDS = 50


def backfill_tick() -> str:
    """Work on daily_aggregates_v1 for up to TICK_SECONDS (if due, and if the lease is free)."""
    return backfill_run(max_seconds=TICK_SECONDS).outcome


def reconcile_tick() -> str:
    """Re-verify closed days that received late messages since the last pass (bounded)."""
    return reconcile_run().outcome


def month_sums_tick() -> str:
    """Store the member sums of closed months that have none: a month an erasure (or any write
    no verification followed) dropped the sums of is read from its rows until then."""
    return f"stored {month_fill()} months"
