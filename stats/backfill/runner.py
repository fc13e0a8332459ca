"""Run the backfill: take the lease, run slices until done or out of time, give it back."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date

from stats.backfill.slices import Limits, SliceReport, slice_run
from stats.backfill.state import LeaseLostError, lease_acquire, lease_release, new_owner
from stats.member_months import months_after_verified
from telegram_bot.state import KVStore, get_store

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunReport:
    outcome: str  # "done", "paused", "lease_lost", "busy", "idle"
    slices: int = 0
    keys: int = 0
    rejected_writes: int = 0
    phase: str = ""


def backfill_run(
    *,
    owner: str | None = None,
    limits: Limits | None = None,
    store: KVStore | None = None,
    force: bool = False,
    today: date | None = None,
    max_seconds: float | None = None,
    max_slices: int | None = None,
    progress: Callable[[SliceReport], None] | None = None,
) -> RunReport:
    """Work on ``daily_aggregates_v1`` until it is done, time or slices run out, or the lease
    is lost. ``force`` starts a new run even when none is due (a running one is resumed);
    ``today`` (UTC by default) decides what is due and a new run's cutoff day."""
    store = store or get_store()
    limits = limits or Limits.from_settings()
    acquired = lease_acquire(owner=owner or new_owner(), store=store, force=force, today=today)
    if acquired.lease is None:
        return RunReport(acquired.outcome)
    lease = acquired.lease
    log.info("backfill %s as %s at %s", acquired.outcome, lease.owner, lease.phase)
    deadline = None if max_seconds is None else time.monotonic() + max_seconds
    slices = keys = 0
    finalized: set[tuple[int, date]] = set()

    def ended(report: RunReport) -> RunReport:
        # The member sums of the closed months of the days finalize went through (their rows'
        # rewrites dropped them), each month in its own transaction under its days' locks.
        months_after_verified(finalized)
        return report

    while True:
        try:
            report = slice_run(lease, limits, store)
        except LeaseLostError as exc:
            log.warning("backfill stopped: %s", exc)
            return ended(RunReport("lease_lost", slices, keys, exc.rejected_writes, lease.phase))
        slices, keys, lease = slices + 1, keys + report.keys, report.lease
        finalized.update(report.finalized)
        if progress is not None:
            progress(report)
        if report.finished:
            return ended(RunReport("done", slices, keys))
        out_of_time = deadline is not None and time.monotonic() >= deadline
        if out_of_time or (max_slices is not None and slices >= max_slices):
            lease_release(lease)
            return ended(RunReport("paused", slices, keys, phase=lease.phase))
