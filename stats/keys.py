"""The stats app's KV key layout, in one place.

Counters are grouped by backfill phase, so that each phase walks one prefix (the activity
hours phase, which runs first, also reads each member-day's messages and words counters):

| key | holds | phase |
|---|---|---|
| ``stats:messages:{chat}:{day}:{user}`` | messages | base (and activity_hours) |
| ``stats:words:{chat}:{day}:{user}`` | words | words (and activity_hours) |
| ``stats:media:{chat}:{day}:{user}:{field}`` | voice/video-note count, seconds | media |
| ``stats:cat:{chat}:{day}:{user}:{field}`` | profanity, violations_low/medium/high | categories |
| ``stats:hour:{chat}:{day}:{user}:{HH}`` | messages in that UTC hour | activity_hours |
| ``activity:{chat}:{day}`` | the chat's daily message total | finalize (parity gate) |
| ``stats:total:{chat}:{day}:{column}`` | the chat's daily total of another column | verify |
| ``stats:late:{chat}:{day}:{user}`` | ``{"at": ms}``: a message for a closed day | reconcile |
| ``stats:late`` / ``stats:late_seen`` | late markers written / reconciled up to | reconcile |
| ``stats:recheck:{chat}:{day}`` | ``{"at", "m"}``: a late message not verified yet | (reads) |
| ``stats:poison:{chat}:{day}:{category}`` | ``{"at": ms}``: a live DB write failed | finalize |
| ``stats:failed:{chat}:{day}`` | ``{"users": {user: [column]}}`` failed writes missed | (reads) |
| ``stats:chat:{chat}`` | ``{"title", "type"}`` of the chat | base (hydration) |
| ``stats:joined:{chat}:{user}`` | join time; expires after the new-member window | (rules) |
| ``last_message:{chat}:{user}`` | ``{"at", "id", "name", "username"}`` | base (profiles) |
| ``msg:{chat}:{id // 100}#{id % 100}`` | the raw-message buffer entry, 7 days (1) | (none) |

(1) A packed key (one Redis hash per 100 messages of a chat); ``msg:{chat}:{ts}:{id}`` in
the legacy layout (``STATE_KEY_LAYOUT``).

``day`` is the UTC date ``YYYY-MM-DD``; chat ids are negative for groups. Keys never contain
spaces (the state layer refuses them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from functools import lru_cache

from telegram_bot.numbers import ascii_int

MESSAGES = "stats:messages:"
WORDS = "stats:words:"
MEDIA = "stats:media:"
CATEGORY = "stats:cat:"
HOURS = "stats:hour:"
POISON = "stats:poison:"
# Set with every poison mark: while it is absent, nobody needs to scan for marks.
POISON_FLAG = "stats:poisoned"
FAILED = "stats:failed:"
TOTAL = "stats:total:"
LATE = "stats:late:"
# Incremented with every late marker; the reconciler scans for markers only when it moved past
# ``LATE_SEEN`` (the value it last finished with).
LATE_FLAG = "stats:late"
LATE_SEEN = "stats:late_seen"
# Per (chat, day): the last late message since the day's last verification (``stats.reconcile``).
RECHECK = "stats:recheck:"
ACTIVITY = "activity:"
COUNTER_FAMILIES = (MESSAGES, WORDS, MEDIA, CATEGORY, HOURS)

MEDIA_FIELDS = ("voice_count", "voice_seconds", "video_note_count", "video_note_seconds")
CATEGORY_FIELDS = ("profanity", "violations_low", "violations_medium", "violations_high")
# The ``stats_daily_user`` column each counter feeds, and the coverage category it belongs to.
COLUMN_CATEGORY: dict[str, str] = {
    "message_count": "messages",
    "word_count": "words",
    "voice_count": "media",
    "voice_seconds": "media",
    "video_note_count": "media",
    "video_note_seconds": "media",
    "profanity_count": "profanity",
    "violations_low": "violations",
    "violations_medium": "violations",
    "violations_high": "violations",
    **{f"hour_{hour:02d}": "hours" for hour in range(24)},
}
_DAY_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_INT_RE = re.compile(r"^-?\d{1,20}$")


@lru_cache(maxsize=64)
def _iso(day: date) -> str:
    """``day.isoformat()``, written once for the few days a key is made of (a counted message
    makes about ten keys of its day)."""
    return day.isoformat()


@dataclass(frozen=True)
class CounterKey:
    """A parsed counter key: which DB column of which (chat, day, user) row it feeds."""

    family: str
    chat_id: int
    day: date
    user_id: int
    column: str
    category: str


def counter_key(family: str, chat_id: int, day: date, user_id: int, field: str = "") -> str:
    base = f"{family}{chat_id}:{_iso(day)}:{user_id}"
    return f"{base}:{field}" if field else base


def column_key(column: str, chat_id: int, day: date, user_id: int) -> str:
    """The counter key that feeds ``column`` of the (chat, day, user) row."""
    if column == "message_count":
        return counter_key(MESSAGES, chat_id, day, user_id)
    if column == "word_count":
        return counter_key(WORDS, chat_id, day, user_id)
    if column in MEDIA_FIELDS:
        return counter_key(MEDIA, chat_id, day, user_id, column)
    if column == "profanity_count":
        return counter_key(CATEGORY, chat_id, day, user_id, "profanity")
    if column in CATEGORY_FIELDS:
        return counter_key(CATEGORY, chat_id, day, user_id, column)
    if column in COLUMN_CATEGORY:
        return counter_key(HOURS, chat_id, day, user_id, column.removeprefix("hour_"))
    raise ValueError(f"unknown stats column {column!r}")


def activity_key(chat_id: int, day: date) -> str:
    return f"{ACTIVITY}{chat_id}:{_iso(day)}"


def total_key(column: str, chat_id: int, day: date) -> str:
    """The chat's daily KV total of ``column`` (messages: the legacy ``activity`` total)."""
    if column == "message_count":
        return activity_key(chat_id, day)
    if column not in COLUMN_CATEGORY:
        raise ValueError(f"unknown stats column {column!r}")
    return f"{TOTAL}{chat_id}:{_iso(day)}:{column}"


def late_key(chat_id: int, day: date, user_id: int) -> str:
    return f"{LATE}{chat_id}:{_iso(day)}:{user_id}"


def recheck_key(chat_id: int, day: date) -> str:
    return f"{RECHECK}{chat_id}:{_iso(day)}"


def parse_late_key(key: str) -> tuple[int, date, int] | None:
    parts = key.removeprefix(LATE).split(":")
    if not key.startswith(LATE) or len(parts) != 3:
        return None
    return _chat_day_user(parts[0], parts[1], parts[2])


def poison_key(chat_id: int, day: date, category: str) -> str:
    return f"{POISON}{chat_id}:{_iso(day)}:{category}"


def failed_key(chat_id: int, day: date) -> str:
    return f"{FAILED}{chat_id}:{_iso(day)}"


def chat_key(chat_id: int) -> str:
    return f"stats:chat:{chat_id}"


def joined_key(chat_id: int, user_id: int) -> str:
    return f"stats:joined:{chat_id}:{user_id}"


def last_message_key(chat_id: int, user_id: int) -> str:
    return f"last_message:{chat_id}:{user_id}"


# Buffer entries a group in the compact layout: a supergroup's message ids are consecutive, so
# a group fills up, and stays a small Redis hash (at most 100 fields: hash-max-listpack-entries).
BUFFER_GROUP = 100


def buffer_key(chat_id: int, ts: int, message_id: int, *, compact: bool = True) -> str:
    """The buffer entry's key: compact, a packed key (``msg:{chat}:{id // 100}#{id % 100}``,
    the time in the entry); legacy, ``msg:{chat}:{ts}:{id}``."""
    if compact:
        return f"msg:{chat_id}:{message_id // BUFFER_GROUP}#{message_id % BUFFER_GROUP}"
    return f"msg:{chat_id}:{ts}:{message_id}"


def parse_counter_key(key: str) -> CounterKey | None:
    """The column a counter key feeds, or None for a key that is not a well-formed counter."""
    for family in COUNTER_FAMILIES:
        if key.startswith(family):
            parts = key[len(family) :].split(":")
            break
    else:
        return None
    with_field = family in (MEDIA, CATEGORY, HOURS)
    if len(parts) != (4 if with_field else 3):
        return None
    head = _chat_day_user(parts[0], parts[1], parts[2])
    if head is None:
        return None
    column_category = _column(family, parts[3] if with_field else "")
    if column_category is None:
        return None
    return CounterKey(family, *head, *column_category)


def parse_chat_day(text: str) -> tuple[int, date] | None:
    """``"{chat}:{day}"`` (the finalize walk's items and cursor)."""
    parts = text.split(":")
    return _chat_day(parts[0], parts[1]) if len(parts) == 2 else None


def parse_poison_key(key: str) -> tuple[int, date, str] | None:
    from stats.models import CATEGORIES

    parts = key.removeprefix(POISON).split(":")
    if not key.startswith(POISON) or len(parts) != 3 or parts[2] not in CATEGORIES:
        return None
    chat_day = _chat_day(parts[0], parts[1])
    return None if chat_day is None else (*chat_day, parts[2])


def _chat_day(chat: str, day: str) -> tuple[int, date] | None:
    if not _INT_RE.match(chat) or not _DAY_RE.match(day):
        return None
    try:
        return int(chat), date.fromisoformat(day)
    except ValueError:
        return None


def _chat_day_user(chat: str, day: str, user: str) -> tuple[int, date, int] | None:
    chat_day = _chat_day(chat, day)
    if chat_day is None or not _INT_RE.match(user):
        return None
    return (*chat_day, int(user))


def _column(family: str, field: str) -> tuple[str, str] | None:
    if family == MESSAGES:
        return "message_count", "messages"
    if family == WORDS:
        return "word_count", "words"
    if family == MEDIA:
        return (field, "media") if field in MEDIA_FIELDS else None
    if family == CATEGORY:
        if field == "profanity":
            return "profanity_count", "profanity"
        return (field, "violations") if field in CATEGORY_FIELDS else None
    hour = ascii_int(field, digits=2) if len(field) == 2 else None
    if hour is not None and hour < 24:
        return f"hour_{field}", "hours"
    return None
