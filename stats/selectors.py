"""Reads of the stats app: the per-day report behind the dashboard, the API and /stats.

Where each day's numbers come from (``DayView.source``):
- ``database``: a closed day (before today, UTC) that finalize marked complete and that has no
  poisoned category: ``stats_daily_user``.
- ``live``: today, and a closed day not (or no longer) verified: the live KV counters.
- ``database_unverified``: a closed day that is not verified and whose KV counters are gone.
- ``none``: nothing counted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

from django.conf import settings

from stats import keys
from stats.models import CATEGORIES, ChatUserProfile, DailyCoverage, DailyUserStat, StatsChat
from stats.poison import poison_marks
from telegram_bot.state import KVStore

MAX_RANGE_DAYS = 366
SOURCE_LABELS = {
    "database": "database (verified complete)",
    "live": "live counters",
    "database_unverified": "database (not verified)",
    "none": "no data",
}


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


def check_range(start: date, end: date) -> None:
    if end < start:
        raise ValueError("the range ends before it starts")
    if (end - start).days >= MAX_RANGE_DAYS:
        raise ValueError(f"a range covers at most {MAX_RANGE_DAYS} days")


def stats_report(
    *, chat_id: int, start: date, end: date, store: KVStore, today: date | None = None
) -> Report:
    """Every day of ``start``..``end`` for one chat, each from its source (module docstring)."""
    check_range(start, end)
    today = today or utc_today()
    days = [start + timedelta(days=n) for n in range((end - start).days + 1)]
    coverage = _coverage(chat_id, start, end)
    poison_marks = _poison_marks(store, chat_id)
    stored = _stored_rows(chat_id, start, min(end, today - timedelta(days=1)))
    views = []
    for day in days:
        rows = coverage.get(day, {})
        poisoned = sorted(
            category
            for category in CATEGORIES
            if (category in rows and rows[category].poisoned) or (day, category) in poison_marks
        )
        messages_row = rows.get("messages")
        status = messages_row.status if messages_row else "none"
        view = DayView(
            day=day,
            source="none",
            status=status,
            reason=messages_row.reason if messages_row else "",
            poisoned=poisoned,
            categories={category: row.status for category, row in sorted(rows.items())},
            members={},
        )
        if day < today and status == "complete" and not poisoned:
            view.source, view.members = "database", stored.get(day, {})
        else:
            live = kv_day_members(store, chat_id, day)
            if live or day >= today:
                view.source, view.members = ("live" if live else "none"), live
            elif day in stored:
                view.source, view.members = "database_unverified", stored[day]
        views.append(view)
    return Report(chat_id, start, end, today, views)


def kv_day_members(store: KVStore, chat_id: int, day: date) -> dict[int, MemberTotals]:
    """The live KV counters of one chat and day, per member."""
    values: dict[int, dict[str, int]] = {}
    for family in keys.COUNTER_FAMILIES:
        for key in store.scan_all(keys.day_prefix(family, chat_id, day)):
            counter = keys.parse_counter_key(key)
            value = store.get(key) if counter else None
            if counter is not None and isinstance(value, int):
                values.setdefault(counter.user_id, {})[counter.column] = value
    members = {}
    for user_id, row in values.items():
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


def _poison_marks(store: KVStore, chat_id: int) -> set[tuple[date, str]]:
    prefix = f"{keys.POISON}{chat_id}:"
    return {(day, category) for _, day, category, _ in poison_marks(store, prefix)}


def _stored_rows(chat_id: int, start: date, end: date) -> dict[date, dict[int, MemberTotals]]:
    days: dict[date, dict[int, MemberTotals]] = {}
    if end < start:
        return days
    for row in DailyUserStat.objects.filter(chat_id=chat_id, day__gte=start, day__lte=end):
        member = MemberTotals(row.user_id)
        member.add({f.attname: getattr(row, f.attname) for f in DailyUserStat._meta.fields})
        days.setdefault(row.day, {})[row.user_id] = member
    return days
