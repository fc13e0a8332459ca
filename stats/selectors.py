"""Reads of the stats app: the per-day report behind the dashboard, the API and /stats.

Every day of a range comes from ``stats_daily_user`` (one query): the live writer keeps it
additively for today and closed days, the backfill rebuilds closed days from the KV counters.
The KV store is asked with gets only, never a scan (a SCAN MATCH on Redis walks the whole
keyspace, whatever the prefix), and only about the days whose counters may still exist
(``kv_oldest_day``: the counters' lifetime); a range never goes past today:

- per such day, the failed-writes index ``stats:failed:{chat}:{day}`` (``stats.poison``); when it
  names users, the poison marks of its categories and the counters of exactly the columns the
  failed live writes missed, which replace the database's values (the KV counters hold every
  fact: they are committed before the database write);
- per day not verified that has data (and today), the chat's daily total ``activity:...``,
  served as ``live_total`` next to the total read;
- the names of ranked members without a hydrated profile (``member_names``).

Where each day's numbers come from (``DayView.source``):
- ``database``: a closed day (before today, UTC) whose every category (so every column shown)
  finalize or the reconciliation verified complete against its KV total, none poisoned.
- ``live``: a day not verified (today, or a closed day the backfill has not verified): the
  live writer's rows, with the KV counters for whatever a failed live write missed
  (``DayView.repaired`` names those categories).
- ``database_unverified``: a day not verified that is known to be incomplete: a poisoned
  category the KV counters can no longer repair (expired, or no index of the failed writes),
  or finalize's parity gate failed (``reason``).
- ``none``: nothing counted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

from django.conf import settings

from stats import keys
from stats.config import counter_ttl_ms
from stats.models import CATEGORIES, ChatUserProfile, DailyCoverage, DailyUserStat, StatsChat
from stats.poison import failed_read, poison_read
from telegram_bot.state import KVStore

FIRST_DAY = date(2000, 1, 1)
MAX_RANGE_DAYS = 366
# Chat ids are stored in BIGINT columns.
CHAT_ID_MIN, CHAT_ID_MAX = -(2**63), 2**63 - 1
SOURCE_LABELS = {
    "database": "database (verified complete)",
    "live": "live counts (not verified yet)",
    "database_unverified": "database (not verified, incomplete)",
    "none": "no data",
}
COLUMNS = tuple(keys.COLUMN_CATEGORY)


@dataclass
class MemberTotals:
    user_id: int
    messages: int = 0
    words: int = 0
    voice_count: int = 0
    voice_seconds: int = 0
    video_notes: int = 0
    video_note_seconds: int = 0
    profanity: int = 0
    violations_low: int = 0
    violations_medium: int = 0
    violations_high: int = 0
    hours: list[int] = field(default_factory=lambda: [0] * 24)
    name: str = ""
    username: str = ""

    def add(self, values: Mapping[str, int]) -> None:
        self.messages += values.get("message_count", 0)
        self.words += values.get("word_count", 0)
        self.voice_count += values.get("voice_count", 0)
        self.voice_seconds += values.get("voice_seconds", 0)
        self.video_notes += values.get("video_note_count", 0)
        self.video_note_seconds += values.get("video_note_seconds", 0)
        self.profanity += values.get("profanity_count", 0)
        self.violations_low += values.get("violations_low", 0)
        self.violations_medium += values.get("violations_medium", 0)
        self.violations_high += values.get("violations_high", 0)
        for hour in range(24):
            self.hours[hour] += values.get(f"hour_{hour:02d}", 0)

    def merge(self, other: MemberTotals) -> None:
        for name in (
            "messages",
            "words",
            "voice_count",
            "voice_seconds",
            "video_notes",
            "video_note_seconds",
            "profanity",
            "violations_low",
            "violations_medium",
            "violations_high",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.hours = [a + b for a, b in zip(self.hours, other.hours, strict=True)]

    @property
    def voice_minutes(self) -> float:
        return round(self.voice_seconds / 60, 1)


@dataclass
class DayView:
    day: date
    source: str
    status: str  # coverage status of the day's message counts
    reason: str
    poisoned: list[str]
    categories: dict[str, str]
    members: dict[int, MemberTotals]
    repaired: list[str] = field(default_factory=list)  # categories read from the KV counters
    live_total: int | None = None  # the KV daily total, read for days not verified

    @property
    def source_label(self) -> str:
        label = SOURCE_LABELS[self.source]
        if self.repaired:
            label += f", KV counters for failed writes ({', '.join(self.repaired)})"
        return label

    @property
    def messages(self) -> int:
        return sum(member.messages for member in self.members.values())

    @property
    def words(self) -> int:
        return sum(member.words for member in self.members.values())

    @property
    def hours(self) -> list[int]:
        totals = [0] * 24
        for member in self.members.values():
            totals = [a + b for a, b in zip(totals, member.hours, strict=True)]
        return totals


@dataclass
class Report:
    chat_id: int
    start: date
    end: date
    today: date
    days: list[DayView]

    def members(self, limit: int | None = None) -> list[MemberTotals]:
        """Members over the whole range, most messages first."""
        totals: dict[int, MemberTotals] = {}
        for day in self.days:
            for user_id, member in day.members.items():
                totals.setdefault(user_id, MemberTotals(user_id)).merge(member)
        ranked = sorted(totals.values(), key=lambda m: (-m.messages, -m.words, m.user_id))
        return ranked[:limit] if limit else ranked


def utc_today() -> date:
    return datetime.now(UTC).date()


def check_range(start: date, end: date, today: date | None = None) -> tuple[date, date]:
    """The range to read: ``end`` clamped to today (days after it are never read).

    ValueError, with a message for the person who asked, for a range that starts before
    ``FIRST_DAY`` or after today, ends before it starts, or covers more than
    ``MAX_RANGE_DAYS`` days.
    """
    today = today or utc_today()
    if min(start, end) < FIRST_DAY or start > today:
        raise ValueError(
            f"days must be between {FIRST_DAY.isoformat()} and today ({today.isoformat()}, UTC)"
        )
    end = min(end, today)
    if end < start:
        raise ValueError("the range ends before it starts")
    if (end - start).days >= MAX_RANGE_DAYS:
        raise ValueError(f"a range covers at most {MAX_RANGE_DAYS} days")
    return start, end


def check_chat_id(chat_id: int) -> int:
    if not CHAT_ID_MIN <= chat_id <= CHAT_ID_MAX:
        raise ValueError("not a chat id")
    return chat_id


def kv_oldest_day(today: date) -> date:
    """The oldest day whose KV counters may still exist (a day's counters are created on that
    day or later, and live ``STATS_COUNTER_TTL_DAYS``); older days cost no KV read."""
    lifetime_days = -(-counter_ttl_ms() // 86_400_000) + 1
    return max(FIRST_DAY, today - timedelta(days=min(lifetime_days, (today - FIRST_DAY).days)))


def stats_report(
    *, chat_id: int, start: date, end: date, store: KVStore, today: date | None = None
) -> Report:
    """Every day of ``start``..``end`` (at most today) for one chat (module docstring)."""
    today = today or utc_today()
    check_chat_id(chat_id)
    start, end = check_range(start, end, today)
    days = [start + timedelta(days=n) for n in range((end - start).days + 1)]
    coverage = _coverage(chat_id, start, end)
    stored = _stored_rows(chat_id, start, end)
    oldest_kv = kv_oldest_day(today)
    views = [
        _day_view(
            chat_id,
            day,
            today=today,
            rows=coverage.get(day, {}),
            values=stored.get(day, {}),
            store=store if day >= oldest_kv else None,
        )
        for day in days
    ]
    return Report(chat_id, start, end, today, views)


def _day_view(
    chat_id: int,
    day: date,
    *,
    today: date,
    rows: Mapping[str, DailyCoverage],
    values: dict[int, dict[str, int]],
    store: KVStore | None,
) -> DayView:
    """One day: from the database, repaired from the KV counters where a live write failed."""
    messages_row = rows.get("messages")
    status = messages_row.status if messages_row else "none"
    reason = messages_row.reason if messages_row else ""
    poisoned = {category for category, row in rows.items() if row.poisoned}
    failed = failed_read(store, chat_id, day) if store is not None else {}
    failed_categories = {keys.COLUMN_CATEGORY[c] for columns in failed.values() for c in columns}
    if store is not None:
        for category in sorted(failed_categories - poisoned):  # KV-only marks (database down)
            if poison_read(store.get(keys.poison_key(chat_id, day, category))) is not None:
                poisoned.add(category)
    view = DayView(
        day=day,
        source="none",
        status=status,
        reason=reason,
        poisoned=sorted(poisoned),
        categories={category: row.status for category, row in sorted(rows.items())},
        members={},
    )
    # Verified only when every category the day shows was verified (a missing row was not).
    verified = all(c in rows and rows[c].status == "complete" for c in CATEGORIES)
    if day < today and verified and not poisoned:
        view.source, view.members = "database", _members(values)
        return view
    lost: set[str] = set()
    if store is not None:
        lost = _repair(store, chat_id, day, values, failed)
        if values or rows or day == today:
            total = store.get(keys.activity_key(chat_id, day))
            view.live_total = total if isinstance(total, int) else None
    view.members = _members(values)
    view.repaired = sorted(failed_categories - lost)
    unrepaired = (poisoned - failed_categories) | lost
    if unrepaired or (day < today and reason):
        view.source = "database_unverified"
    elif view.members:
        view.source = "live"
    return view


def _repair(
    store: KVStore,
    chat_id: int,
    day: date,
    values: dict[int, dict[str, int]],
    failed: Mapping[int, set[str]],
) -> set[str]:
    """Replace the columns failed writes missed with their KV counters; return the categories
    that could not be repaired (the member's counters expired)."""
    lost: set[str] = set()
    for user_id, columns in sorted(failed.items()):
        # Every counted message adds to the member's messages counter, so it is the member's
        # oldest key of the day: while it exists, so do the others.
        messages = store.get(keys.column_key("message_count", chat_id, day, user_id))
        if not isinstance(messages, int):
            lost.update(keys.COLUMN_CATEGORY[column] for column in columns)
            continue
        row = values.setdefault(user_id, {})
        for column in sorted(columns):
            value = (
                messages
                if column == "message_count"
                else store.get(keys.column_key(column, chat_id, day, user_id))
            )
            if isinstance(value, int):
                row[column] = value
            else:
                lost.add(keys.COLUMN_CATEGORY[column])
    return lost


def _members(values: Mapping[int, Mapping[str, int]]) -> dict[int, MemberTotals]:
    members = {}
    for user_id, row in sorted(values.items()):
        if not any(row.values()):
            continue
        members[user_id] = MemberTotals(user_id)
        members[user_id].add(row)
    return members


def member_names(
    chat_id: int, members: Iterable[MemberTotals], store: KVStore
) -> list[MemberTotals]:
    """Fill in display names: the hydrated profile, else the KV ``last_message`` entry."""
    members = list(members)
    profiles = {
        profile.user_id: profile
        for profile in ChatUserProfile.objects.filter(
            chat_id=chat_id, user_id__in=[member.user_id for member in members]
        )
    }
    for member in members:
        profile = profiles.get(member.user_id)
        if profile is not None and profile.display_name:
            member.name, member.username = profile.display_name, profile.username
            continue
        last = store.get(keys.last_message_key(chat_id, member.user_id))
        if isinstance(last, dict) and last.get("name"):
            member.name, member.username = str(last["name"]), str(last.get("username") or "")
        else:
            member.name = member.name or f"user {member.user_id}"
    return members


def known_chats(store: KVStore) -> list[tuple[int, str]]:
    """Chats with statistics (or allowed in settings), with their titles where known."""
    ids = set(DailyUserStat.objects.values_list("chat_id", flat=True).distinct())
    ids |= set(StatsChat.objects.values_list("chat_id", flat=True))
    ids |= {chat_id for chat_id in settings.ALLOWED_CHAT_IDS if chat_id < 0}
    titles = dict(StatsChat.objects.values_list("chat_id", "title"))
    chats = []
    for chat_id in sorted(ids):
        title = titles.get(chat_id) or ""
        if not title:
            meta = store.get(keys.chat_key(chat_id))
            title = str(meta.get("title") or "") if isinstance(meta, dict) else ""
        chats.append((chat_id, title or str(chat_id)))
    return chats


def _coverage(chat_id: int, start: date, end: date) -> dict[date, dict[str, DailyCoverage]]:
    rows: dict[date, dict[str, DailyCoverage]] = {}
    for row in DailyCoverage.objects.filter(chat_id=chat_id, day__gte=start, day__lte=end):
        rows.setdefault(row.day, {})[row.category] = row
    return rows


def _stored_rows(chat_id: int, start: date, end: date) -> dict[date, dict[int, dict[str, int]]]:
    """``stats_daily_user`` of the range: {day: {user: {column: value}}}, one query."""
    days: dict[date, dict[int, dict[str, int]]] = {}
    rows = DailyUserStat.objects.filter(chat_id=chat_id, day__gte=start, day__lte=end)
    for row in rows.values("day", "user_id", *COLUMNS):
        day, user_id = row.pop("day"), row.pop("user_id")
        days.setdefault(day, {})[user_id] = row
    return days
