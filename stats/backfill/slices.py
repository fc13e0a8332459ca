"""One bounded slice of the backfill: read a page of keys, write absolute values, advance.

A slice takes at most ``max_keys`` keys and spends at most ``max_reads`` KV reads (the page
scan counts as one) and ``max_statements`` SQL statements (the state write included). When
the reads or statements run out, the slice stops in the middle of its page, and where the next
slice resumes never depends on positions in a page, which shift when a key before them expires
(counters expire continuously) or, on Redis, when a rehash reorders a SCAN batch:

- ordered scans (the memory and database stores, and the finalize walk over coverage rows):
  the scan cursor is the last key returned, so the saved cursor is the last key TAKEN and the
  next slice scans strictly after it;
- unordered scans (Redis): the saved cursor stays at the page's start and the keys of the page
  already done are saved with it (``page_done``, at most ``max_keys``); the next slice re-reads
  the page and skips them by key. A key that moved out of the batch is returned by a later
  SCAN call, which is SCAN's guarantee; one done twice is written twice, to the same value.

Ordering against the live writer: a slice runs in one transaction that first takes the
day lock (``stats.daylock``) EXCLUSIVE for every (chat, day) of its page, then reads the
counters and writes. The live writer holds the same lock SHARED from before its KV commit to
its database commit, so no increment is half-written while the slice reads and writes: each
is in both stores, or (its process died) in the KV store only.

Values are absolute, one column per counter key, but never lower a cell
(``col = GREATEST(col, <the key's value>)``, ``sql``): writing a key twice changes nothing,
and it repairs whatever a crashed or failed live write left out. A KV value below the database
means the KV store lost data; the database keeps its figure and finalize does not verify the
day. A column whose key does not exist is left alone: the live writer only ever adds to columns
whose key exists, since the KV commit comes first. (Rebuilding whole rows instead would need a
prefix scan per row, which on Redis walks the whole keyspace.)

Finalize verifies every column of a day against its KV daily total (``stats.verify``), under
the day's exclusive lock too.

The writes of a slice and the state advance commit in one transaction: the aggregates, then
coverage, profiles and chats (each in sorted key order, like the live writer, so concurrent
writers cannot deadlock), then the state row. A fenced write that was rejected, or a state row
that is no longer ours, rolls the whole slice back and raises ``LeaseLostError``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import date, timedelta, tzinfo
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, OuterRef, Q, Subquery
from django.utils import timezone

from stats import keys, verify
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
from stats.poison import poison_read, poison_retire
from stats.totals import zone_of
from telegram_bot.models import ChatPreference
from telegram_bot.state import KVStore

DAYS_WALK = "days"
FAMILIES: dict[str, tuple[str, ...]] = {
    "base": (keys.MESSAGES,),
    "words": (keys.WORDS,),
    "media": (keys.MEDIA,),
    "categories": (keys.CATEGORY,),
    "activity_hours": (keys.HOURS,),
    # Poison marks first (onto the coverage rows), then the parity gate for every day the
    # base phase rebuilt in this run: a walk over coverage rows, not KV keys (DAYS_WALK).
    "finalize": (keys.POISON, DAYS_WALK),
}
# One key may need this much: the page scan + a finalize day (every column's total); the
# page query, the day lock and the state write + a finalize day (the sums, the coverage rows,
# the verdict, the read totals).
MIN_READS = 1 + verify.TOTAL_READS
MIN_STATEMENTS = 7


@dataclass(frozen=True)
class Limits:
    max_keys: int = 50
    max_reads: int = 300
    max_statements: int = 90

    def __post_init__(self) -> None:
        if self.max_keys < 1 or self.max_reads < MIN_READS or self.max_statements < MIN_STATEMENTS:
            raise ValueError(
                f"backfill limits too small: keys >= 1, reads >= {MIN_READS}, "
                f"statements >= {MIN_STATEMENTS} (one key may need that much)"
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
    statements: int
    finished: bool


@dataclass
class Staged:
    """What a slice will write, and what it has spent."""

    reads: int = 0
    statements: int = 0
    rows: dict[tuple[int, date, int], dict[str, int]] = field(default_factory=dict)
    triples: set[tuple[int, date, str]] = field(default_factory=set)
    profiles: dict[tuple[int, int], tuple[str, str]] = field(default_factory=dict)
    seen_profiles: set[tuple[int, int]] = field(default_factory=set)
    chats: dict[int, tuple[str, str]] = field(default_factory=dict)
    seen_chats: set[int] = field(default_factory=set)
    poison: list[tuple[int, date, str, int]] = field(default_factory=list)
    totals: list[tuple[int, date, dict[str, int | None]]] = field(default_factory=list)
    zones: dict[int, tzinfo] = field(default_factory=dict)  # the finalize page's chats
    verified_from: int = 0


def slice_run(lease: Lease, limits: Limits, store: KVStore) -> SliceReport:
    """Run the slice at the lease's position; raise LeaseLostError if the lease is gone."""
    prefix = FAMILIES[lease.phase][lease.step]
    if prefix == DAYS_WALK:
        staged = Staged(reads=0, statements=3)  # the page query, the day lock, the state write
        page, next_cursor, zones = _days_page(lease, limits.max_keys)
        ordered = True
    else:
        staged = Staged(reads=1, statements=2)  # the page scan, the day lock, the state write
        page, next_cursor = store.scan(prefix, lease.cursor, limits.max_keys)
        ordered, zones = scan_is_ordered(store), {}
    done = set(lease.page_done)
    # A position saved with a page_offset but no page_done (an older version) is redone from
    # the page's start: writing a key again changes nothing, skipping one loses it.
    todo = [key for key in page if key not in done]
    taken: list[str] = []
    staged.zones = zones
    with transaction.atomic():
        # Every day of the page, before any counter is read (module docstring).
        lock_days(_days_of(todo, lease), shared=False)
        staged.verified_from = now_ms() - skew_ms()
        for key in todo:
            reads, statements = _cost(key, lease, staged)
            if (
                staged.reads + reads > limits.max_reads
                or staged.statements + statements > limits.max_statements
            ):
                break
            staged.reads += _take(key, lease, staged, store)
            staged.statements += statements
            taken.append(key)
        if len(taken) == len(todo):
            position = _next_position(lease, next_cursor)
        elif ordered:
            position = dataclasses.replace(
                lease, cursor=taken[-1] if taken else lease.cursor, page_offset=0, page_done=()
            )
        else:
            now_done = done | set(taken)
            page_done = tuple(key for key in page if key in now_done)
            position = dataclasses.replace(lease, page_offset=len(page_done), page_done=page_done)
        new_lease = _write(lease, position, staged, len(taken))
    _retire_imported_marks(store, staged)
    return SliceReport(
        lease=new_lease,
        phase=lease.phase,
        keys=len(taken),
        reads=staged.reads,
        statements=staged.statements,
        finished=not new_lease.phase,
    )


def _days_of(page: list[str], lease: Lease) -> set[tuple[int, date]]:
    """The closed (chat, day) pairs whose figures taking ``page`` reads or writes."""
    days: set[tuple[int, date]] = set()
    if lease.phase == "finalize":
        if lease.step == 1:
            days = {pair for key in page if (pair := keys.parse_chat_day(key))}
    else:
        counters = (keys.parse_counter_key(key) for key in page)
        days = {(c.chat_id, c.day) for c in counters if c is not None}
    return {(chat_id, day) for chat_id, day in days if day < lease.cutoff_day}


def scan_is_ordered(store: KVStore) -> bool:
    """Whether ``store.scan`` walks keys in order with the last key returned as its cursor
    (the memory and database stores): then a scan from any key continues strictly after it.
    Any other store (Redis, or one this module does not know) is treated as unordered."""
    return urlsplit(store.url).scheme in ("memory", "db")


def _days_page(lease: Lease, limit: int) -> tuple[list[str], str | None, dict[int, tzinfo]]:
    """One page of the (chat, day) pairs whose message counts this run rebuilt, as
    ``"chat:day"`` items in order, the cursor after it (like a KV scan), and the time zones
    of the page's chats (read in the same query, for the days' read totals).

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
    if lease.cursor:
        chat_day = keys.parse_chat_day(lease.cursor)
        if chat_day is None:
            raise ValueError(f"bad finalize cursor {lease.cursor!r}")
        chat_id, day = chat_day
        query = query.filter(Q(chat_id__gt=chat_id) | Q(chat_id=chat_id, day__gt=day))
    zone = ChatPreference.objects.filter(chat_id=OuterRef("chat_id")).values("time_zone")[:1]
    rows = list(
        query.order_by("chat_id", "day")
        .annotate(zone=Subquery(zone))
        .values_list("chat_id", "day", "zone")[:limit]
    )
    page = [f"{chat_id}:{day.isoformat()}" for chat_id, day, _zone in rows]
    zones = {chat_id: zone_of(name) for chat_id, _day, name in rows}
    return page, (page[-1] if len(page) == limit else None), zones


def skew_ms() -> int:
    return settings.STATS_BACKFILL_CLOCK_SKEW_MS


def rebuilt_at(lease: Lease) -> int:
    """The time a category counts as rebuilt from: the phase's start, less the clock skew
    allowed between the web nodes that poison and the worker (``STATS_BACKFILL_CLOCK_SKEW_MS``)."""
    return lease.phase_started_ms - skew_ms()


def _cost(key: str, lease: Lease, staged: Staged) -> tuple[int, int]:
    """The KV reads and statements taking ``key`` can cost (0, 0 for a key skipped)."""
    if lease.phase == "finalize":
        if lease.step == 0:
            poisoned = keys.parse_poison_key(key)
            return (1, 1) if poisoned and poisoned[1] < lease.cutoff_day else (0, 0)
        # every column's total; the sums, the missing coverage rows, the verdict, the read
        # totals (``stats.totals``; the chat's zone came with the page)
        return (verify.TOTAL_READS, 4) if keys.parse_chat_day(key) else (0, 0)
    counter = keys.parse_counter_key(key)
    if counter is None or counter.day >= lease.cutoff_day:
        return 0, 0
    reads = 1
    statements = 0 if (counter.chat_id, counter.day, counter.user_id) in staged.rows else 1
    statements += (counter.chat_id, counter.day, counter.category) not in staged.triples
    if lease.phase == "base":
        if (counter.chat_id, counter.user_id) not in staged.seen_profiles:
            reads, statements = reads + 1, statements + 1
        if counter.chat_id not in staged.seen_chats:
            reads, statements = reads + 1, statements + 1
    return reads, statements


def _take(key: str, lease: Lease, staged: Staged, store: KVStore) -> int:
    """Stage what ``key`` contributes; return the KV reads it took."""
    if lease.phase == "finalize":
        return _take_finalize(key, lease, staged, store)
    counter = keys.parse_counter_key(key)
    if counter is None or counter.day >= lease.cutoff_day:
        return 0
    reads = (
        _hydrate(counter.chat_id, counter.user_id, staged, store) if lease.phase == "base" else 0
    )
    value = store.get(key)
    if isinstance(value, int):  # else expired since the scan
        row = staged.rows.setdefault((counter.chat_id, counter.day, counter.user_id), {})
        row[counter.column] = value
        staged.triples.add((counter.chat_id, counter.day, counter.category))
    return reads + 1


def _take_finalize(key: str, lease: Lease, staged: Staged, store: KVStore) -> int:
    if lease.step == 0:
        poisoned = keys.parse_poison_key(key)
        if not poisoned or poisoned[1] >= lease.cutoff_day:
            return 0
        at = poison_read(store.get(key))
        if at is not None:
            staged.poison.append((*poisoned, at))
        return 1
    chat_day = keys.parse_chat_day(key)
    if not chat_day:
        return 0
    staged.totals.append((*chat_day, verify.read_totals(store, *chat_day)))
    return verify.TOTAL_READS


def _hydrate(chat_id: int, user_id: int, staged: Staged, store: KVStore) -> int:
    reads = 0
    if (chat_id, user_id) not in staged.seen_profiles:
        reads += 1
        staged.seen_profiles.add((chat_id, user_id))
        last = store.get(keys.last_message_key(chat_id, user_id))
        if isinstance(last, dict):
            staged.profiles[(chat_id, user_id)] = (
                str(last.get("name") or ""),
                str(last.get("username") or ""),
            )
    if chat_id not in staged.seen_chats:
        reads += 1
        staged.seen_chats.add(chat_id)
        chat = store.get(keys.chat_key(chat_id))
        if isinstance(chat, dict):
            staged.chats[chat_id] = (str(chat.get("title") or ""), str(chat.get("type") or ""))
    return reads


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
        for (chat_id, day, user_id), values in sorted(staged.rows.items()):
            rejected += not fenced.aggregate_put(chat_id, day, user_id, values)
        for chat_id, day, category in sorted(staged.triples):
            rejected += not fenced.coverage_rebuilt(chat_id, day, category, rebuilt_at(lease))
        for (chat_id, user_id), (name, username) in sorted(staged.profiles.items()):
            rejected += not fenced.profile_put(chat_id, user_id, name, username)
        for chat_id, (title, chat_type) in sorted(staged.chats.items()):
            rejected += not fenced.chat_put(chat_id, title, chat_type)
        for chat_id, day, category, at in sorted(staged.poison):
            rejected += not fenced.coverage_poison_import(chat_id, day, category, at)
        for chat_id, day, totals in sorted(staged.totals, key=lambda t: t[:2]):
            rejected += not finalize_day(
                fenced, chat_id, day, totals, staged.verified_from, staged.zones.get(chat_id)
            )
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
    zone: tzinfo | None = None,
) -> bool:
    """The gate: complete only when every column's SUM equals its KV daily total and the day
    has messages (``stats.verify``); the caller holds the day's lock exclusive. Returns
    whether the fenced writes applied."""
    reason = verify.verdict(fenced.column_sums(chat_id, day), totals)
    if not reason:
        return fenced.day_complete(chat_id, day, verified_from, zone)
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
