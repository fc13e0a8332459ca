"""What one slice takes, reads and stages: the batch between the scan pages and the writes.

``Chooser`` takes scanned keys into the slice while its budgets allow, charging each key what
it will cost (a value read; a row, a coverage row, a member's name and a chat's name the first
time the slice meets them; the counters read along with it, ``ALONG``), without reading
anything: the slice locks the days of what it chose first. ``read_staged`` then reads every
value in ``get_many`` calls of at most 1,000 keys and stages one cell per counter read, which
``sql.Fenced.counters_put`` gathers into rows. Counter keys are parsed by ``CounterParser``,
the rules of ``stats.keys.parse_counter_key`` at a fraction of the cost (the ``(chat, day)``
part once per slice).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from stats import keys, verify
from stats.poison import poison_read
from telegram_bot.state import KVStore

# (chat, day, user, column, category) of a counter key of a closed day
Counter = tuple[int, date, int, str, str]
# (chat, day, user, column, value) of a counter read
Cell = tuple[int, date, int, str, int]


@dataclass(frozen=True)
class Budget:
    reads: int
    writes: int


@dataclass
class Staged:
    """What a slice will read and write, and what it has spent (reads, and writes counted
    against ``max_statements``)."""

    reads: int = 0
    statements: int = 0
    # chosen, to read under the days' locks
    counters: list[tuple[str, Counter]] = field(default_factory=list)
    planned_rows: set[tuple[int, date, int]] = field(default_factory=set)
    planned_triples: set[tuple[int, date, str]] = field(default_factory=set)
    along_rows: set[tuple[int, date, int]] = field(default_factory=set)
    poison_keys: list[tuple[str, tuple[int, date, str]]] = field(default_factory=list)
    days: list[tuple[int, date]] = field(default_factory=list)
    # read, to write: one (chat, day, user, column, value) a counter read
    cells: list[Cell] = field(default_factory=list)
    triples: set[tuple[int, date, str]] = field(default_factory=set)
    profiles: dict[tuple[int, int], tuple[str, str]] = field(default_factory=dict)
    seen_profiles: set[tuple[int, int]] = field(default_factory=set)
    chats: dict[int, tuple[str, str]] = field(default_factory=dict)
    seen_chats: set[int] = field(default_factory=set)
    poison: list[tuple[int, date, str, int]] = field(default_factory=list)
    totals: list[tuple[int, date, dict[str, int | None]]] = field(default_factory=list)
    rechecks: list[tuple[int, date, Any]] = field(default_factory=list)  # (chat, day, mark)
    verified_from: int = 0

    def days_locked(self) -> set[tuple[int, date]]:
        """The closed (chat, day) pairs whose figures the slice reads or writes."""
        return {(c[0], c[1]) for _, c in self.counters} | set(self.days)


@dataclass
class Imported:
    """The member and chat names a run has chosen to import so far (kept by ``runner`` for
    one ``backfill_run``): the base phase then reads and writes each once a run, not once a
    slice (a slice of 5,000 counters meets about as many members, most of them met before).
    A slice that fails ends the run, and with it this memory. Bounded: past ``LIMIT`` names it
    forgets them all, which only means reading them again."""

    LIMIT = 500_000

    profiles: set[tuple[int, int]] = field(default_factory=set)
    chats: set[int] = field(default_factory=set)

    def add(self, staged: Staged) -> None:
        if len(self.profiles) + len(staged.seen_profiles) > self.LIMIT:
            self.profiles.clear()
        self.profiles |= staged.seen_profiles
        self.chats |= staged.seen_chats


class Chooser:
    """Takes keys of one phase step into ``staged`` while ``budget`` allows."""

    def __init__(
        self,
        phase: str,
        step: int,
        prefix: str,
        cutoff_day: date,
        staged: Staged,
        imported: Imported | None = None,
    ) -> None:
        self.phase, self.step, self.cutoff_day, self.staged = phase, step, cutoff_day, staged
        self.imported = imported or Imported()
        self.parse = CounterParser(prefix, cutoff_day) if phase != "finalize" else None
        self.prefix = prefix
        self.along = ALONG.get(prefix, ())

    def take(self, todo: list[str], budget: Budget) -> int:
        """Take keys from the start of ``todo`` until one does not fit; how many it took. A
        key that needs nothing (a day from the cutoff on, not a well-formed key) is free.

        With a key of a family in ``ALONG``, the counters of the same member-day listed there
        are read too (once a member-day in a slice), while the budgets allow: their cells then
        go in the same row write. The phases that walk those families still walk all of them,
        so a counter read along is never the only chance it gets."""
        if self.parse is None:
            return self._take_finalize(todo, budget)
        staged, parse = self.staged, self.parse
        rows, triples = staged.planned_rows, staged.planned_triples
        profiles, chats = staged.seen_profiles, staged.seen_chats
        known_profiles, known_chats = self.imported.profiles, self.imported.chats
        counters, along, along_rows = staged.counters, self.along, staged.along_rows
        base = self.phase == "base"
        head, with_field = len(self.prefix), parse.parts == 4
        reads, writes = staged.reads, staged.statements
        taken = 0
        for key in todo:
            counter = parse(key)
            if counter is not None:
                chat_id, day, user_id, _, category = counter
                row, triple = (chat_id, day, user_id), (chat_id, day, category)
                cost_reads = 1
                cost_writes = (row not in rows) + (triple not in triples)
                new_profile = (
                    base
                    and (chat_id, user_id) not in profiles
                    and (chat_id, user_id) not in known_profiles
                )
                new_chat = base and chat_id not in chats and chat_id not in known_chats
                if base:
                    cost_reads += new_profile + new_chat
                    cost_writes += new_profile + new_chat
                if reads + cost_reads > budget.reads or writes + cost_writes > budget.writes:
                    break
                reads += cost_reads
                writes += cost_writes
                counters.append((key, counter))
                rows.add(row)
                triples.add(triple)
                if new_profile:
                    profiles.add((chat_id, user_id))
                if new_chat:
                    chats.add(chat_id)
                if along and row not in along_rows and reads + len(along) <= budget.reads:
                    new_triples = [
                        (chat_id, day, other)
                        for _, _, other in along
                        if (chat_id, day, other) not in triples
                    ]
                    if writes + len(new_triples) <= budget.writes:
                        reads += len(along)
                        writes += len(new_triples)
                        triples.update(new_triples)
                        along_rows.add(row)
                        # the member-day part of the key, "{chat}:{day}:{user}"
                        member_day = key[head : key.rindex(":")] if with_field else key[head:]
                        for family, column, other in along:
                            counters.append((family + member_day, (*row, column, other)))
            taken += 1
        staged.reads, staged.statements = reads, writes
        return taken

    def _take_finalize(self, todo: list[str], budget: Budget) -> int:
        staged, taken = self.staged, 0
        for key in todo:
            poisoned = chat_day = None
            if self.step == 0:
                poisoned = keys.parse_poison_key(key)
                cost = (1, 1) if poisoned and poisoned[1] < self.cutoff_day else (0, 0)
            else:
                chat_day = keys.parse_chat_day(key)
                # every column's total; the sums, the missing coverage rows, the verdict
                cost = (verify.DAY_READS, 3) if chat_day else (0, 0)
            if staged.reads + cost[0] > budget.reads or staged.statements + cost[1] > budget.writes:
                break
            staged.reads += cost[0]
            staged.statements += cost[1]
            if poisoned and cost[0]:
                staged.poison_keys.append((key, poisoned))
            elif chat_day:
                staged.days.append(chat_day)
            taken += 1
        return taken


_FIELDS: dict[str, dict[str, tuple[str, str]]] = {
    keys.MESSAGES: {"": ("message_count", "messages")},
    keys.WORDS: {"": ("word_count", "words")},
    keys.MEDIA: {name: (name, "media") for name in keys.MEDIA_FIELDS},
    keys.CATEGORY: {
        name: ("profanity_count", "profanity") if name == "profanity" else (name, "violations")
        for name in keys.CATEGORY_FIELDS
    },
    keys.HOURS: {f"{hour:02d}": (f"hour_{hour:02d}", "hours") for hour in range(24)},
}
# The counters read along with a key of a family (``Chooser.take``): (family, column,
# category). The first phase, activity hours, reads each member-day's messages and words
# counters with its hour counters, so that one row write carries them all: every counted
# message adds to an hour counter, so every member-day with messages has one.
ALONG: dict[str, tuple[tuple[str, str, str], ...]] = {
    keys.HOURS: (
        (keys.MESSAGES, "message_count", "messages"),
        (keys.WORDS, "word_count", "words"),
    ),
}
_USER_ID = re.compile(r"-?[0-9]{1,20}")


class CounterParser:
    """``keys.parse_counter_key`` for one family, cheaper: the (chat, day) part is parsed once
    per slice, and what the fast path does not accept (nothing our writer writes) goes the
    exact way. None for a key of a day from the cutoff on, as for a malformed key, and for a
    key whose column is not a known column (so no key can name a column of the SQL)."""

    def __init__(self, family: str, cutoff_day: date) -> None:
        self.family, self.cutoff_day = family, cutoff_day
        self.fields = _FIELDS[family]
        self.parts = 4 if family in (keys.MEDIA, keys.CATEGORY, keys.HOURS) else 3
        self.heads: dict[tuple[str, str], tuple[int, date] | None] = {}

    def __call__(self, key: str) -> Counter | None:
        parts = key[len(self.family) :].split(":")
        if key.startswith(self.family) and len(parts) == self.parts:
            chat_day = (parts[0], parts[1])
            if chat_day in self.heads:
                head = self.heads[chat_day]
            else:
                head = self.heads[chat_day] = keys.parse_chat_day(f"{parts[0]}:{parts[1]}")
            column = self.fields.get(parts[3] if self.parts == 4 else "")
            if head and column and _USER_ID.fullmatch(parts[2]):
                if head[1] >= self.cutoff_day:
                    return None
                return (head[0], head[1], int(parts[2]), *column)
        counter = keys.parse_counter_key(key)
        if (
            counter is None
            or counter.day >= self.cutoff_day
            or counter.column not in keys.COLUMN_CATEGORY
        ):
            return None
        return (counter.chat_id, counter.day, counter.user_id, counter.column, counter.category)


def read_staged(store: KVStore, staged: Staged) -> None:
    """Read what the slice chose (call under its days' locks) and stage the rows, coverage,
    names, poison marks and totals to write."""
    if staged.days:
        read = verify.read_totals_many(store, staged.days)
        staged.totals = [(*day, t) for day, (t, _) in zip(staged.days, read, strict=True)]
        staged.rechecks = [(*day, r) for day, (_, r) in zip(staged.days, read, strict=True)]
    if staged.poison_keys:
        marks = store.get_each([key for key, _ in staged.poison_keys])
        for (_, poisoned), value in zip(staged.poison_keys, marks, strict=True):
            at = poison_read(value)
            if at is not None:
                staged.poison.append((*poisoned, at))
    if not staged.counters:
        return
    profiles, chats = sorted(staged.seen_profiles), sorted(staged.seen_chats)
    wanted = [key for key, _ in staged.counters]
    wanted += [keys.last_message_key(chat_id, user_id) for chat_id, user_id in profiles]
    wanted += [keys.chat_key(chat_id) for chat_id in chats]
    values = store.get_each(wanted)
    cells, triples = staged.cells, staged.triples
    for (_, counter), value in zip(staged.counters, values, strict=False):
        if isinstance(value, int):  # else expired since the scan (or, words, never written)
            chat_id, day, user_id, column, category = counter
            cells.append((chat_id, day, user_id, column, value))
            triples.add((chat_id, day, category))
    names = values[len(staged.counters) :]
    for (chat_id, user_id), last in zip(profiles, names, strict=False):
        if isinstance(last, dict):
            staged.profiles[(chat_id, user_id)] = (
                str(last.get("name") or ""),
                str(last.get("username") or ""),
            )
    for chat_id, chat in zip(chats, names[len(profiles) :], strict=True):
        if isinstance(chat, dict):
            staged.chats[chat_id] = (str(chat.get("title") or ""), str(chat.get("type") or ""))
