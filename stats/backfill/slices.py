"""One bounded slice of the backfill: choose a batch of keys, lock their days, read their
values in a few round trips, write each table's rows in one statement, advance.

A slice takes at most ``max_keys`` keys, spends at most ``max_reads`` KV reads (each value
read counts, however many one ``get_many`` carries; each scan call counts one) and
``max_statements`` writes: each row it upserts, plus the day lock and the state write (each
finalize day counts its three writes: the coverage rows created where missing, their verdict
and the day's totals row; its sums query and its chat's zone lookup are reads of the
database, not counted). The rows of a table go in one statement (``sql.Fenced.*_many``), so a
slice sends about six statements whatever its size; the budget counts rows so that it bounds
the transaction's work, which holds the days' exclusive locks. When a budget runs out, the
slice stops in the middle of a scan page, and where the next slice resumes never depends on
positions in a page, which shift when a key before them expires (counters expire
continuously) or, on Redis, when a rehash reorders a SCAN batch:

- ordered scans (the memory and database stores, and the finalize walk over coverage rows):
  the scan cursor is the last key returned, so the saved cursor is the last key TAKEN and the
  next slice scans strictly after it;
- unordered scans (Redis): the saved cursor stays at the page's start and the keys of the page
  already done are saved with it (``page_done``, at most one page); the next slice re-reads
  the page and skips them by key. A key that moved out of the batch is returned by a later
  SCAN call, which is SCAN's guarantee; one done twice is written twice, to the same value.

A slice walks as many scan pages (at most 1,000 keys each) as its limits allow; pages it
finishes move the cursor on, the page it stops in is saved as above.

Ordering against the live writer: the keys are chosen first (scans only, no value read; the
runner may choose them in a thread while the slice before is still writing, ``Chosen``), then
one transaction takes the day lock (``stats.daylock``) EXCLUSIVE for every closed (chat, day)
of the chosen keys, reads their values, writes, and commits. The live writer holds the same
lock SHARED from before its KV commit to its database commit, so no increment is half-written
while the slice reads and writes: each is in both stores, or (its process died) in the KV
store only.

Values are absolute, one column per counter key, but never lower a cell
(``col = GREATEST(col, <the key's value>)``, ``sql``): writing a key twice changes nothing,
and it repairs whatever a crashed or failed live write left out. A KV value below the database
means the KV store lost data; the database keeps its figure and finalize does not verify the
day. A column whose key does not exist is left alone: the live writer only ever adds to columns
whose key exists, since the KV commit comes first. (Rebuilding whole rows instead would need a
prefix scan per row, which on Redis walks the whole keyspace.) A row none of whose cells would
change is not written again (``Fenced.counters_put``).

One row write a member-day: the first phase, activity hours, reads each member-day's messages
and words counters along with its hour counters (``batch.ALONG``, while the slice's budgets
allow) and writes them in the same row. Every counted message adds to an hour counter, so
every member-day with messages has one, and the base and words phases after it find those
rows right: they read every counter of their family again and write only what differs (a
counter without an hour counter: its other counters expired first, the KV store lost them,
the budget left them out; or an increment since). So each of those phases is still the whole
guarantee for its family, whatever the hours phase read, and a crash between the phases, or a
live write in between (under the day's shared lock, to both stores), changes nothing in what
a run writes: each counter is read under its day's exclusive lock and written never lower.

Finalize verifies every column of a day against its KV daily total (``stats.verify``), under
the day's exclusive lock too.

The writes of a slice and the state advance commit in one transaction: the aggregates, then
coverage, profiles and chats (each in sorted key order, like the live writer, so concurrent
writers cannot deadlock), then the state row. A fenced write that was rejected, or a state row
that is no longer ours, rolls the whole slice back and raises ``LeaseLostError``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from stats import keys, verify
from stats.backfill.batch import Budget, Chooser, Imported, Staged, read_staged
from stats.backfill.sql import Fenced
from stats.backfill.state import (
    JOB_NAME,
    PHASES,
    Lease,
    LeaseLostError,
    lease_seconds,
    now_ms,
)
from stats.config import counter_ttl_ms
from stats.daylock import lock_days
from stats.models import BackfillState, BackfillStatus, DailyCoverage
from stats.poison import poison_retire
from stats.recheck import rechecks_done
from telegram_bot.state import KVStore
from telegram_bot.state.base import MAX_SCAN_LIMIT

DAYS_WALK = "days"
FAMILIES: dict[str, tuple[str, ...]] = {
    "base": (keys.MESSAGES,),
    "words": (keys.WORDS,),
    "media": (keys.MEDIA,),
    "categories": (keys.CATEGORY,),
    "activity_hours": (keys.HOURS,),
    # Poison marks first (onto the coverage rows), then the parity gate for every day whose
    # messages this run rebuilt: a walk over coverage rows, not KV keys (DAYS_WALK).
    "finalize": (keys.POISON, DAYS_WALK),
}
COUNTER_PHASES = frozenset(phase for phase in FAMILIES if phase != "finalize")
# One key may need this much: the page scan + a poison mark, or a finalize day (every column's
# total and the day's recheck mark; its page is a query, not a read); the state write + the
# day lock + a base key (aggregate, coverage, profile, chat).
MIN_READS = max(2, verify.DAY_READS)
MIN_STATEMENTS = 6
# The most a slice may take (the settings' bounds): its keys, values and rows are held in
# memory, and its transaction holds the days' exclusive locks while it writes them.
MAX_KEYS = 10_000
MAX_READS = MAX_STATEMENTS = 100_000


@dataclass(frozen=True)
class Limits:
    """A slice's bounds. The defaults (``STATS_BACKFILL_MAX_*``): 5,000 keys, 12,000 reads,
    12,000 writes: a base slice of 5,000 counters may read as many member names and write as
    many profiles; a finalize slice is bounded by its reads (35 a day: about 340 days)."""

    max_keys: int = 5000
    max_reads: int = 12_000
    max_statements: int = 12_000

    def __post_init__(self) -> None:
        if self.max_keys < 1 or self.max_reads < MIN_READS or self.max_statements < MIN_STATEMENTS:
            raise ValueError(
                f"backfill limits too small: keys >= 1, reads >= {MIN_READS}, "
                f"statements >= {MIN_STATEMENTS} (one key may need that much)"
            )
        if (
            self.max_keys > MAX_KEYS
            or self.max_reads > MAX_READS
            or self.max_statements > MAX_STATEMENTS
        ):
            raise ValueError(
                f"backfill limits too large: keys <= {MAX_KEYS}, reads <= {MAX_READS}, "
                f"statements <= {MAX_STATEMENTS} (a slice holds them in memory, and its "
                "days' locks while it writes)"
            )

    @classmethod
    def from_settings(cls, **overrides: int | None) -> Limits:
        values = {
            "max_keys": settings.STATS_BACKFILL_MAX_KEYS,
            "max_reads": settings.STATS_BACKFILL_MAX_KV_READS,
            "max_statements": settings.STATS_BACKFILL_MAX_STATEMENTS,
        }
        values.update({name: value for name, value in overrides.items() if value is not None})
        return cls(**values)


@dataclass(frozen=True)
class SliceReport:
    lease: Lease  # where the next slice starts
    phase: str
    keys: int
    reads: int
    statements: int  # writes, as counted against ``max_statements``
    finished: bool
    finalized: tuple[tuple[int, date], ...] = ()  # the (chat, day)s finalize verified or not


@dataclass(frozen=True)
class Chosen:
    """The keys of a slice, chosen from ``start``'s position (no value read, nothing locked)."""

    start: Lease
    taken: int
    position: Lease  # where the slice after it starts
    staged: Staged

    def starts_at(self, lease: Lease) -> bool:
        start = self.start
        return (start.phase, start.step, start.cursor, start.page_done, start.cutoff_day) == (
            lease.phase,
            lease.step,
            lease.cursor,
            lease.page_done,
            lease.cutoff_day,
        )


def slice_choose(
    lease: Lease, limits: Limits, store: KVStore, imported: Imported | None = None
) -> Chosen:
    """Choose the keys of the slice at the lease's position: KV scans only (and, in
    finalize's day walk, a query of coverage rows). ``imported``: the names this run has
    imported already, not read again (read only: ``slice_run`` adds a slice's names)."""
    staged = Staged()
    taken, position = _choose(lease, limits, store, staged, imported)
    return Chosen(lease, taken, position, staged)


def slice_run(
    lease: Lease,
    limits: Limits,
    store: KVStore,
    *,
    chosen: Chosen | None = None,
    chosen_next: Callable[[Lease], None] | None = None,
    imported: Imported | None = None,
) -> SliceReport:
    """Run the slice at the lease's position; raise LeaseLostError if the lease is gone.

    ``chosen``: its keys, chosen beforehand (used only if chosen from this very position).
    ``chosen_next``: called with the next slice's position once this slice's keys are chosen,
    before its transaction, so that the caller may choose the next slice's keys meanwhile
    (``runner``): choosing reads no value and locks nothing, so it may run before this slice
    commits, like any scan that precedes a slice's lock. ``imported``: the member and chat
    names this run imported in the slices before (``batch.Imported``)."""
    if chosen is None or not chosen.starts_at(lease):
        chosen = slice_choose(lease, limits, store, imported)
    staged, taken, position = chosen.staged, chosen.taken, chosen.position
    if imported is not None:
        # The names of this slice, for the next slices of the run (the run ends if this slice
        # fails, and with it the memory).
        imported.add(staged)
    if chosen_next is not None:
        chosen_next(position)
    with transaction.atomic():
        # Every day of the chosen keys, before any counter is read (module docstring).
        lock_days(staged.days_locked(), shared=False)
        staged.verified_from = now_ms() - skew_ms()
        read_staged(store, staged)
        new_lease = _write(lease, position, staged, taken)
    _retire_imported_marks(store, staged)
    rechecks_done(store, staged.rechecks)  # the days finalize verified, whatever the verdict
    return SliceReport(
        lease=new_lease,
        phase=lease.phase,
        keys=taken,
        reads=staged.reads,
        statements=staged.statements,
        finished=not new_lease.phase,
        finalized=tuple((chat_id, day) for chat_id, day, _ in staged.totals),
    )


def _choose(
    lease: Lease, limits: Limits, store: KVStore, staged: Staged, imported: Imported | None
) -> tuple[int, Lease]:
    """Choose the slice's keys, page by page, within its limits (no value is read yet: their
    days are locked first); return how many keys it takes and the position after them."""
    prefix = FAMILIES[lease.phase][lease.step]
    walk_days = prefix == DAYS_WALK
    ordered = walk_days or scan_is_ordered(store)
    chooser = Chooser(lease.phase, lease.step, prefix, lease.cutoff_day, staged, imported)
    budget = Budget(limits.max_reads, limits.max_statements)
    cursor, done, taken = lease.cursor, set(lease.page_done), 0
    # The first page: its query, the day lock and the state write; or its scan call, the day
    # lock and the state write. Each further page: its query, or its scan call.
    staged.statements, staged.reads = (3, 0) if walk_days else (2, 1)
    while True:
        size = min(limits.max_keys - taken, MAX_SCAN_LIMIT)
        if walk_days:
            page, next_cursor = _days_page(lease, cursor, size)
        else:
            page, next_cursor = store.scan(prefix, cursor, size)
        # A position saved with a page_offset but no page_done (an older version) is redone
        # from the page's start: writing a key again changes nothing, skipping one loses it.
        todo = [key for key in page if key not in done] if done else page
        page_taken = chooser.take(todo, budget)
        taken += page_taken
        if page_taken < len(todo):  # a budget ran out in this page
            if ordered:
                last = todo[page_taken - 1] if page_taken else cursor
                return taken, dataclasses.replace(lease, cursor=last, page_offset=0, page_done=())
            now_done = done | set(todo[:page_taken])
            page_done = tuple(key for key in page if key in now_done)
            return taken, dataclasses.replace(
                lease, cursor=cursor, page_offset=len(page_done), page_done=page_done
            )
        if (
            next_cursor is None
            or taken >= limits.max_keys
            or not _room_for_page(walk_days, staged, limits)
        ):
            return taken, _next_position(lease, next_cursor)
        cursor, done = next_cursor, set()
        if walk_days:
            staged.statements += 1
        else:
            staged.reads += 1


def _room_for_page(walk_days: bool, staged: Staged, limits: Limits) -> bool:
    """Whether another page (its query or scan call, and one key of it) still fits."""
    if walk_days:
        return (
            staged.statements + 4 <= limits.max_statements
            and staged.reads + verify.DAY_READS <= limits.max_reads
        )
    return staged.reads + 2 <= limits.max_reads and staged.statements + 1 <= limits.max_statements


def scan_is_ordered(store: KVStore) -> bool:
    """Whether ``store.scan`` walks keys in order with the last key returned as its cursor
    (the memory and database stores): then a scan from any key continues strictly after it.
    Any other store (Redis, or one this module does not know) is treated as unordered."""
    return urlsplit(store.url).scheme in ("memory", "db")


def _days_page(lease: Lease, cursor: str | None, limit: int) -> tuple[list[str], str | None]:
    """One page of the (chat, day) pairs whose message counts this run rebuilt, after
    ``cursor``, as ``"chat:day"`` items in order, and the cursor after it (like a KV scan).

    Only days whose counters have not started to expire: a day's totals are its oldest keys
    (each is created by the day's first message with that column), so near the end of the
    counters' lifetime a total may be gone while members' counters remain, and a verification
    would reopen a day that was right. Such a day keeps its last verdict."""
    lifetime_days = counter_ttl_ms() // 86_400_000
    query = DailyCoverage.objects.filter(
        category="messages",
        day__lt=lease.cutoff_day,
        day__gt=lease.cutoff_day - timedelta(days=lifetime_days),
        rebuilt_at__gte=lease.run_started_ms - skew_ms(),
    )
    if cursor:
        chat_day = keys.parse_chat_day(cursor)
        if chat_day is None:
            raise ValueError(f"bad finalize cursor {cursor!r}")
        chat_id, day = chat_day
        query = query.filter(Q(chat_id__gt=chat_id) | Q(chat_id=chat_id, day__gt=day))
    pairs = query.order_by("chat_id", "day").values_list("chat_id", "day")[:limit]
    page = [f"{chat_id}:{day.isoformat()}" for chat_id, day in pairs]
    return page, (page[-1] if len(page) == limit else None)


def skew_ms() -> int:
    return settings.STATS_BACKFILL_CLOCK_SKEW_MS


def rebuilt_at(lease: Lease) -> int:
    """The time a category counts as rebuilt from: the phase's start, less the clock skew
    allowed between the web nodes that poison and the worker (``STATS_BACKFILL_CLOCK_SKEW_MS``)."""
    return lease.phase_started_ms - skew_ms()


def _next_position(lease: Lease, next_cursor: str | None) -> Lease:
    """The position after a page done completely: the next page, step, phase, or the end."""
    if next_cursor is not None:
        return dataclasses.replace(lease, cursor=next_cursor, page_offset=0, page_done=())
    start = dataclasses.replace(
        lease, cursor=None, page_offset=0, page_done=(), phase_started_ms=now_ms()
    )
    if lease.step + 1 < len(FAMILIES[lease.phase]):
        return dataclasses.replace(start, step=lease.step + 1)
    index = PHASES.index(lease.phase)
    if index + 1 < len(PHASES):
        return dataclasses.replace(start, phase=PHASES[index + 1], step=0)
    return dataclasses.replace(start, phase="", step=0)


def _write(lease: Lease, position: Lease, staged: Staged, taken: int) -> Lease:
    now = timezone.now()
    rejected = 0
    with transaction.atomic(), connection.cursor() as cursor:
        fenced = Fenced(cursor, lease, now)
        if staged.cells and not fenced.counters_put(staged.cells):
            rejected += len({cell[:3] for cell in staged.cells})
        triples = sorted(staged.triples)
        rejected += len(triples) - fenced.coverage_rebuilt_many(triples, rebuilt_at(lease))
        profiles = [
            (c, u, name, username) for (c, u), (name, username) in sorted(staged.profiles.items())
        ]
        rejected += len(profiles) - fenced.profiles_put(profiles)
        chats = [(c, title, kind) for c, (title, kind) in sorted(staged.chats.items())]
        rejected += len(chats) - fenced.chats_put(chats)
        for chat_id, day, category, at in sorted(staged.poison):
            rejected += not fenced.coverage_poison_import(chat_id, day, category, at)
        for chat_id, day, totals in sorted(staged.totals, key=lambda t: t[:2]):
            rejected += not finalize_day(fenced, chat_id, day, totals, staged.verified_from)
        if rejected or not _advance(lease, position, taken, now):
            raise LeaseLostError(rejected)
    return dataclasses.replace(
        position,
        keys_done=lease.keys_done + taken,
        phase_started_ms=position.phase_started_ms,
    )


def finalize_day(
    fenced: Fenced,
    chat_id: int,
    day: date,
    totals: dict[str, int | None],
    verified_from: int,
) -> bool:
    """The gate: complete only when every column's SUM equals its KV daily total and the day
    has messages (``stats.verify``); the caller holds the day's lock exclusive. Returns
    whether the fenced writes applied."""
    reason = verify.verdict(fenced.column_sums(chat_id, day), totals)
    if not reason:
        return fenced.day_complete(chat_id, day, verified_from)
    return fenced.day_not_complete(chat_id, day, reason)


def _advance(lease: Lease, position: Lease, taken: int, now: Any) -> bool:
    """The fenced state write: save the position and renew the lease (or finish the run)."""
    fields: dict[str, Any] = {
        "phase": position.phase,
        "phase_step": position.step,
        "cursor": position.cursor or "",
        "page_offset": position.page_offset,
        "page_done": list(position.page_done),
        "phase_started_ms": position.phase_started_ms,
        "keys_done": F("keys_done") + taken,
        "slices_done": F("slices_done") + 1,
        "lease_expires_at": now + timedelta(seconds=lease_seconds()),
        "updated_at": now,
    }
    if not position.phase:
        fields.update(
            status=BackfillStatus.DONE, finished_at=now, lease_owner="", lease_expires_at=None
        )
    updated = BackfillState.objects.filter(
        job_name=JOB_NAME,
        version=lease.version,
        revision=lease.revision,
        lease_owner=lease.owner,
        status=BackfillStatus.RUNNING,
        lease_expires_at__gt=now,
    ).update(**fields)
    return updated == 1


def _retire_imported_marks(store: KVStore, staged: Staged) -> None:
    """Poison marks now on their coverage rows leave the KV store, unless set again since."""
    for chat_id, day, category, at in staged.poison:
        poison_retire(store, chat_id, day, category, at)
