"""The singleton job's state row and its lease.

The lease is taken under ``select_for_update`` on the state row: free, expired, or already
ours. Taking it bumps ``revision``, so the previous holder's identity (owner, revision) no
longer matches and all of its fenced writes do nothing. Every state write renews the lease.
"""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from stats.aggregates import utc_today
from stats.config import counter_ttl_ms
from stats.models import BackfillState, BackfillStatus, DailyCoverage
from stats.poison import poison_flag, poison_flag_clear, poison_marks
from telegram_bot.state import KVStore

JOB_NAME = "daily_aggregates_v1"
STATE_VERSION = 2  # 2: activity hours first (a run saved by 1 starts again)
PHASES = ("activity_hours", "base", "words", "media", "categories", "finalize")


class LeaseLostError(Exception):
    """Another worker holds the lease now (or the job was reset): this worker must stop."""

    def __init__(self, rejected_writes: int = 0) -> None:
        super().__init__(f"backfill lease lost ({rejected_writes} fenced writes rejected)")
        self.rejected_writes = rejected_writes


@dataclass(frozen=True)
class Lease:
    """A worker's identity for fencing, and the position it works from."""

    owner: str
    revision: int
    version: int
    phase: str
    step: int
    cursor: str | None
    page_offset: int
    cutoff_day: date
    run_started_ms: int
    phase_started_ms: int
    keys_done: int
    page_done: tuple[str, ...] = ()  # keys of the page at ``cursor`` done (unordered scans)

    @classmethod
    def of(cls, state: BackfillState) -> Lease:
        assert state.cutoff_day is not None
        return cls(
            owner=state.lease_owner,
            revision=state.revision,
            version=state.version,
            phase=state.phase,
            step=state.phase_step,
            cursor=state.cursor or None,
            page_offset=state.page_offset,
            cutoff_day=state.cutoff_day,
            run_started_ms=int(state.run_started_at.timestamp() * 1000)
            if state.run_started_at
            else 0,
            phase_started_ms=state.phase_started_ms or 0,
            keys_done=state.keys_done,
            page_done=tuple(key for key in (state.page_done or []) if isinstance(key, str)),
        )


@dataclass(frozen=True)
class Acquired:
    lease: Lease | None
    outcome: str  # "started", "resumed", "busy" (another worker), "idle" (nothing due)


def new_owner() -> str:
    return f"{socket.gethostname()[:40]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def lease_seconds() -> int:
    return settings.STATS_BACKFILL_LEASE_SECONDS


def now_ms() -> int:
    return int(timezone.now().timestamp() * 1000)


def lease_acquire(
    *, owner: str, store: KVStore, force: bool = False, today: date | None = None
) -> Acquired:
    """Take the lease: resume a running job, or start a new run when one is due (or forced).

    A new run fixes its cutoff day (today, UTC): days from the cutoff on are left alone.
    """
    today = today or utc_today()
    now = timezone.now()
    with transaction.atomic():
        BackfillState.objects.get_or_create(job_name=JOB_NAME, defaults={"version": STATE_VERSION})
        state = BackfillState.objects.select_for_update().get(job_name=JOB_NAME)
        if state.version != STATE_VERSION:
            _reinitialise(state)
        held = state.lease_owner and state.lease_expires_at and state.lease_expires_at > now
        if held and state.lease_owner != owner:
            return Acquired(None, "busy")
        if state.status == BackfillStatus.RUNNING:
            outcome = "resumed"
        elif force or _due(state, today, store):
            _start_run(state, today, now)
            outcome = "started"
        else:
            return Acquired(None, "idle")
        state.lease_owner = owner
        state.lease_expires_at = now + timedelta(seconds=lease_seconds())
        state.revision += 1
        state.save()
    return Acquired(Lease.of(state), outcome)


def lease_release(lease: Lease) -> bool:
    """Give the lease up (fenced: only if still ours) so the next tick need not wait."""
    return bool(
        BackfillState.objects.filter(
            job_name=JOB_NAME, revision=lease.revision, lease_owner=lease.owner
        ).update(lease_owner="", lease_expires_at=None, updated_at=timezone.now())
    )


@transaction.atomic
def backfill_reset() -> BackfillState:
    """Forget the current run: the next run starts from the beginning with a new cutoff.

    Bumps the revision, so a worker still running loses its lease and writes nothing more.
    """
    BackfillState.objects.get_or_create(job_name=JOB_NAME, defaults={"version": STATE_VERSION})
    state = BackfillState.objects.select_for_update().get(job_name=JOB_NAME)
    _reinitialise(state)
    state.save()
    return state


def state_get() -> BackfillState | None:
    return BackfillState.objects.filter(job_name=JOB_NAME).first()


def _reinitialise(state: BackfillState) -> None:
    state.version = STATE_VERSION
    state.status = BackfillStatus.IDLE
    state.phase, state.phase_step, state.cursor, state.page_offset = "", 0, "", 0
    state.page_done = []
    state.cutoff_day = None
    state.lease_owner, state.lease_expires_at = "", None
    state.revision += 1


def _start_run(state: BackfillState, today: date, now: datetime) -> None:
    state.status = BackfillStatus.RUNNING
    state.phase, state.phase_step, state.cursor, state.page_offset = PHASES[0], 0, "", 0
    state.page_done = []
    state.cutoff_day = today
    state.run_started_at = now
    state.phase_started_ms = int(now.timestamp() * 1000)
    state.finished_at = None
    state.keys_done = state.slices_done = 0


def _due(state: BackfillState, today: date, store: KVStore) -> bool:
    """A first run; a day closed since the last run; or a closed day with a poison mark that
    no backfill phase has rebuilt yet (within the counters' lifetime: after that, nothing can)."""
    if state.status == BackfillStatus.IDLE or state.cutoff_day is None:
        return True
    if state.cutoff_day < today:
        return True
    # Scanning for marks walks the whole keyspace on Redis: only when a mark was written.
    flag = poison_flag(store)
    if flag is not None and "at" in flag:
        marks = list(poison_marks(store))
        if any(day < today for _, day, _, _ in marks):
            return True
        if not marks:
            poison_flag_clear(store, flag)
    oldest = today - timedelta(milliseconds=counter_ttl_ms())
    return (
        DailyCoverage.objects.filter(day__lt=today, day__gte=oldest, poisoned_at__isnull=False)
        .filter(Q(rebuilt_at__isnull=True) | Q(poisoned_at__gte=F("rebuilt_at")))
        .exists()
    )
