"""The backfill ``daily_aggregates_v1``: KV counters -> ``stats_daily_user``, absolute values
that never lower a cell, under the days' exclusive locks (``stats.daylock``).

Seeds 000-001. A singleton job with its state in ``stats_backfill_state``;
a run fixes its cutoff day (today UTC) at start and walks, phase by phase, the counter
families below it: activity hours (with each member-day's messages and words counters read
along, so that one row write carries them all), base (messages, plus member and chat names),
words, media, categories (profanity, violations), and finalize (poison marks onto coverage
rows, then every column of each chat and day verified against its KV daily total,
``stats.verify``). The phases after the first write only the rows that differ.
Slices are bounded (``Limits``) and batched (``batch``: the keys chosen first, their days
locked in one statement, their values read with ``get_many``, each table's rows written in one
statement); the cursor and the keys done in its page are saved with every slice, so a run
survives a crash and goes on from there once the 600 s lease has expired.
Every write is fenced on the lease (``sql.Fenced``).

A run is due when none has run yet, when a day has closed since the last one, or when a closed
day was poisoned since; ``force`` starts one anyway. See ``state`` (lease), ``slices`` (one
slice), ``runner`` (the loop), ``dry_run``.
"""

from __future__ import annotations

from stats.backfill.dry_run import DryRunReport, backfill_dry_run
from stats.backfill.runner import RunReport, backfill_run
from stats.backfill.slices import Limits, SliceReport, slice_run
from stats.backfill.state import (
    JOB_NAME,
    PHASES,
    Lease,
    LeaseLostError,
    backfill_reset,
    lease_acquire,
    lease_release,
    new_owner,
    state_get,
)

__all__ = [
    "JOB_NAME",
    "PHASES",
    "DryRunReport",
    "Lease",
    "LeaseLostError",
    "Limits",
    "RunReport",
    "SliceReport",
    "backfill_dry_run",
    "backfill_reset",
    "backfill_run",
    "lease_acquire",
    "lease_release",
    "new_owner",
    "slice_run",
    "state_get",
]
