"""What one message counts for, and the KV ops that count it.

``message_facts`` reads a Telegram message into ``MessageFacts`` (pure, apart from the
new-member lookup it is given); ``counting_ops`` turns the facts into the KV ops that the
handler commits together with the update's done-marker (``ctx.commit_once``): one round trip,
atomic, and a re-delivered update counts nothing twice.

Counted: messages from people (not bots, not messages sent on behalf of a chat) in groups and
supergroups that are not service messages (joins, pins, title changes...). Commands are routed
to their own handlers and are not counted. Days and hours are UTC, from the message's ``date``.
A word is a whitespace-separated token with at least one letter or digit.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from functools import cached_property, lru_cache
from operator import attrgetter
from typing import Any

from stats import keys
from stats.config import CountingConfig
from telegram_bot.state import Increment, Put
from telegram_bot.state.base import Op
from telegram_bot.updates import Message

LINK_ENTITIES = frozenset({"url", "text_link"})
_LINK_RE = re.compile(r"(?:https?://|www\.|\bt\.me/|\btelegram\.me/)", re.IGNORECASE)


@dataclass(frozen=True)
class MessageFacts:
    chat_id: int
    user_id: int
    message_id: int
    ts: int
    kind: str  # "text", "voice", "video_note" or "other"
    words: int = 0
    voice_seconds: int = 0
    video_note_seconds: int = 0
    profanity: int = 0
    violations: Mapping[str, int] = field(default_factory=dict)
    text: str = ""
    user_name: str = ""
    username: str = ""
    chat_title: str = ""
    chat_type: str = ""

    @cached_property
    def _at(self) -> datetime:
        return datetime.fromtimestamp(self.ts, tz=UTC)

    @property
    def day(self) -> date:
        return self._at.date()

    @property
    def hour(self) -> int:
        return self._at.hour

    def deltas(self) -> dict[str, int]:
        """The ``stats_daily_user`` columns this message adds to (only non-zero ones)."""
        deltas = {"message_count": 1, f"hour_{self.hour:02d}": 1}
        if self.words:
            deltas["word_count"] = self.words
        if self.kind == "voice":
            deltas["voice_count"] = 1
            if self.voice_seconds:
                deltas["voice_seconds"] = self.voice_seconds
        if self.kind == "video_note":
            deltas["video_note_count"] = 1
            if self.video_note_seconds:
                deltas["video_note_seconds"] = self.video_note_seconds
        if self.profanity:
            deltas["profanity_count"] = self.profanity
        for severity, count in self.violations.items():
            if count:
                deltas[f"violations_{severity}"] = count
        return deltas


def message_facts(
    message: Message, config: CountingConfig, *, is_new_member: Callable[[], bool]
) -> MessageFacts | None:
    """The facts of a countable message, or None for one that does not count."""
    sender, chat = message.from_user, message.chat
    if sender is None or sender.is_bot or message.sender_chat is not None:
        return None
    if chat.type not in ("group", "supergroup") or message.is_service:
        return None
    text = message.text_or_caption
    return MessageFacts(
        chat_id=chat.id,
        user_id=sender.id,
        message_id=message.message_id,
        ts=message.date,
        kind=_kind(message),
        words=count_words(text),
        voice_seconds=message.voice.duration if message.voice else 0,
        video_note_seconds=message.video_note.duration if message.video_note else 0,
        profanity=config.profanity.count(text) if config.profanity else 0,
        violations=_violations(text, message, config, is_new_member),
        text=text if config.store_text else "",
        user_name=sender.full_name,
        username=sender.username or "",
        chat_title=chat.title or "",
        chat_type=chat.type,
    )


def counting_ops(
    facts: MessageFacts, config: CountingConfig, *, now_ms: int | None = None
) -> list[Op]:
    """Every KV write of one counted message, sorted by key (no lock-order deadlocks).

    Besides the member's counters, every column is added to the chat's daily total
    (``activity`` for messages, ``stats:total:...`` for the others): finalize and the
    reconciliation verify each column the product shows against its total. A message for a
    day that is closed, or closes within ``STATS_LATE_MARGIN_SECONDS`` (clocks of the web
    nodes and the worker may differ), also writes ``late_ops`` in the same atomic commit.
    """
    ttl, day, chat, user = config.counter_ttl_ms, facts.day, facts.chat_id, facts.user_id
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    ops: list[Op] = [
        Increment(keys.activity_key(chat, day), 1, ttl),
        Put(
            keys.last_message_key(chat, user),
            {
                "at": facts.ts,
                "id": facts.message_id,
                "name": facts.user_name,
                "username": facts.username,
            },
            ttl,
        ),
        Put(keys.chat_key(chat), {"title": facts.chat_title, "type": facts.chat_type}, ttl),
        Put(
            keys.buffer_key(chat, facts.ts, facts.message_id, compact=config.compact),
            _buffer_entry(facts, compact=config.compact),
            config.buffer_ttl_ms,
        ),
    ]
    for column, delta in facts.deltas().items():
        ops.append(Increment(keys.column_key(column, chat, day, user), delta, ttl))
        if column != "message_count":  # its total is the activity key above
            ops.append(Increment(keys.total_key(column, chat, day), delta, ttl))
    if day < _utc_day((now_ms + config.late_margin_ms) // 1000):
        ops += late_ops(chat, day, user, facts.message_id, now_ms=now_ms, ttl_ms=ttl)
    ops.sort(key=_BY_KEY)
    return ops


def late_ops(
    chat_id: int, day: date, user_id: int, message_id: int, *, now_ms: int, ttl_ms: int
) -> list[Op]:
    """What a late message (its day closed, or about to) adds to its KV commit: a late marker
    for (chat, day, member) and a bump of the late flag, so that the reconciliation re-verifies
    the day soon (which is how a crash between this commit and the database add is found);
    and the day's recheck mark, unique to this message (a chat's message ids are), which
    keeps the day from being served as verified until a verification has seen it
    (``stats.reconcile``)."""
    return [
        Put(keys.late_key(chat_id, day, user_id), {"at": now_ms}, ttl_ms),
        Increment(keys.LATE_FLAG, 1, ttl_ms),
        Put(keys.recheck_key(chat_id, day), {"at": now_ms, "m": message_id}, ttl_ms),
    ]


_BY_KEY = attrgetter("key")


@lru_cache(maxsize=4)
def _utc_day(second: int) -> date:
    """The UTC day of a second since the epoch (asked once a message, for the same few)."""
    return datetime.fromtimestamp(second, tz=UTC).date()


def join_ops(message: Message, config: CountingConfig, *, now_ms: int) -> list[Op]:
    """Record who joined (``new_chat_members``): a new member until ``new_member_days`` after
    the join (the record expires then)."""
    remaining = message.date * 1000 + config.new_member_ms - now_ms
    if remaining <= 0:
        return []
    return sorted(
        (
            Put(keys.joined_key(message.chat.id, member.id), message.date, remaining)
            for member in message.new_chat_members or []
            if not member.is_bot
        ),
        key=lambda op: op.key,
    )


def count_words(text: str) -> int:
    return sum(1 for token in text.split() if token.isalnum() or any(ch.isalnum() for ch in token))


def has_link(message: Message) -> bool:
    for entities in (message.entities, message.caption_entities):
        if any(entity.type in LINK_ENTITIES for entity in entities or []):
            return True
    return text_has_link(message.text_or_caption)


def text_has_link(text: str) -> bool:
    """Whether ``_LINK_RE`` finds a link in ``text``. Every link it finds has "://", "www." or
    ".me/" in it, lower-cased: a text with none of them (most messages) is not searched, which
    cost about 3 us a message."""
    lowered = text.lower()
    if "://" not in lowered and "www." not in lowered and ".me/" not in lowered:
        return False
    return bool(_LINK_RE.search(text))


def _kind(message: Message) -> str:
    if message.voice is not None:
        return "voice"
    if message.video_note is not None:
        return "video_note"
    return "text" if message.text is not None else "other"


def _violations(
    text: str,
    message: Message,
    config: CountingConfig,
    is_new_member: Callable[[], bool],
) -> dict[str, int]:
    counts: dict[str, int] = {}
    tokens = text.split()
    for rule in config.banned:
        if any(rule.matcher.matches(token) for token in tokens):
            counts[rule.severity] = counts.get(rule.severity, 0) + 1
    # The KV lookup only for messages with a link, and only when a link rule is on.
    if config.link_severities and has_link(message) and is_new_member():
        for severity in config.link_severities:
            counts[severity] = counts.get(severity, 0) + 1
    return counts


def _buffer_entry(facts: MessageFacts, *, compact: bool = True) -> dict[str, Any]:
    """The buffer's entry: the member, the kind, words and the rest only when there is any.
    Compact: the time (``at``, not in the key), the kind only when not text, words only when
    some; legacy: ``u``, ``k``, ``w`` always."""
    if compact:
        entry: dict[str, Any] = {"at": facts.ts, "u": facts.user_id}
        if facts.kind != "text":
            entry["k"] = facts.kind
        if facts.words:
            entry["w"] = facts.words
    else:
        entry = {"u": facts.user_id, "k": facts.kind, "w": facts.words}
    seconds = facts.voice_seconds or facts.video_note_seconds
    if seconds:
        entry["d"] = seconds
    if facts.profanity:
        entry["p"] = facts.profanity
    if facts.text:
        entry["t"] = facts.text
    return entry
