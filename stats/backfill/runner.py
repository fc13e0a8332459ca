"""Run the backfill: take the lease, run slices until done or out of time, give it back.

Between slices the run keeps the names it has imported (``batch.Imported``: each member's and
chat's name is read once a run, not once a slice) and, on Redis, chooses the next slice's keys
in a thread while a slice writes (``ChoosingAhead``)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import date
from urllib.parse import urlsplit

from stats.backfill.batch import Imported
from stats.backfill.slices import (
    COUNTER_PHASES,
    Chosen,
    Limits,
    SliceReport,
    slice_choose,
    slice_run,
)
from stats.backfill.state import Lease, LeaseLostError, lease_acquire, lease_release, new_owner
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

    with ChoosingAhead(store, limits) as ahead:
        while True:
            try:
                report = slice_run(
                    lease,
                    limits,
                    store,
                    chosen=ahead.take(),
                    chosen_next=ahead.start if ahead.enabled else None,
                    imported=ahead.imported,
                )
            except LeaseLostError as exc:
                log.warning("backfill stopped: %s", exc)
                lost = RunReport("lease_lost", slices, keys, exc.rejected_writes, lease.phase)
                return ended(lost)
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


class ChoosingAhead:
    """Chooses the next slice's keys in a thread while the current slice locks, reads and
    writes: its scan and parsing (Python) then overlap the slice's waits on the database and
    the KV store. Only for the counter phases on Redis: their choice is KV scans alone, and
    the Redis client is safe to share between threads (the database's day walk of finalize,
    and the in-process and database stores, are chosen in the slice's own thread)."""

    def __init__(self, store: KVStore, limits: Limits) -> None:
        self.store, self.limits = store, limits
        # the names this run has imported (batch.Imported), whichever thread chooses
        self.imported = Imported()
        self.enabled = urlsplit(store.url).scheme in ("redis", "rediss", "unix")
        self.executor: ThreadPoolExecutor | None = None
        self.pending: Future[Chosen] | None = None

    def __enter__(self) -> ChoosingAhead:
        if self.enabled:
            self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="backfill")
        return self

    def __exit__(self, *exc: object) -> None:
        if self.executor is not None:
            self.executor.shutdown(wait=True, cancel_futures=True)

    def start(self, position: Lease) -> None:
        """Choose the slice at ``position`` (a counter phase's) in the thread."""
        if self.executor is not None and position.phase in COUNTER_PHASES:
            self.pending = self.executor.submit(
                slice_choose, position, self.limits, self.store, self.imported
            )

    def take(self) -> Chosen | None:
        """What the thread chose, if anything; a failure there is left to the slice, which
        chooses again (and fails the same way, in its own thread)."""
        pending, self.pending = self.pending, None
        if pending is None:
            return None
        try:
            return pending.result()
        except Exception:  # chosen again by the slice itself
            return None
