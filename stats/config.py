"""What counting needs from the operators' settings, cached briefly per process.

The settings row and the violation rules are read at most every ``STATS_CONFIG_CACHE_SECONDS``
(default 5) per process, so counting a message costs no query; saving them in the admin site
clears this process's cache, other processes see the change within that time.
Tunables read from ``django.conf.settings`` with defaults (none of them is required):
``STATS_COUNTER_TTL_DAYS`` (60: how long daily counters stay in the KV store; the backfill must
run within that), ``STATS_BUFFER_TTL_DAYS`` (7: the raw-message buffer),
``STATS_LATE_MARGIN_SECONDS`` (300: a message for a day that closes within this margin leaves a
late marker, as one for a closed day does).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

import cachetools
from django.conf import settings

from stats.models import StatsSettings, ViolationKind, ViolationRule
from stats.wordmatch import WordMatcher, lines_of, shipped_allowed, shipped_patterns

DAY_MS = 24 * 3600 * 1000


@dataclass(frozen=True)
class BannedWordsRule:
    name: str
    severity: str
    matcher: WordMatcher


@dataclass(frozen=True)
class CountingConfig:
    store_text: bool
    new_member_days: int
    profanity: WordMatcher | None
    banned: tuple[BannedWordsRule, ...]
    link_severities: tuple[str, ...]  # one entry per enabled "links from new members" rule
    counter_ttl_ms: int
    buffer_ttl_ms: int
    late_margin_ms: int = 300_000
    # The compact key layout (STATE_KEY_LAYOUT): buffer entries packed 100 messages of a chat
    # a group (stats.keys.buffer_key).
    compact: bool = True

    @property
    def new_member_ms(self) -> int:
        return self.new_member_days * DAY_MS


# Read at start: STATS_CONFIG_CACHE_SECONDS is not meant to change while a process runs.
_cache: cachetools.TTLCache[str, CountingConfig] = cachetools.TTLCache(
    maxsize=1, ttl=settings.STATS_CONFIG_CACHE_SECONDS
)
_lock = threading.Lock()  # a TTLCache is not thread-safe


def counting_config() -> CountingConfig:
    """The current config, rebuilt from the database when the cached copy is too old."""
    with _lock:
        config = _cache.get("config")
    if config is None:
        config = _load()  # outside the lock: a slow database stops no other thread
        with _lock:
            _cache["config"] = config
    return config


def counting_config_clear() -> None:
    with _lock:
        _cache.clear()


def _renew_lock_in_child() -> None:
    # A fork while another thread held the lock would leave the child's copy held forever.
    global _lock
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_renew_lock_in_child)


def counter_ttl_ms() -> int:
    return settings.STATS_COUNTER_TTL_DAYS * DAY_MS


def buffer_ttl_ms() -> int:
    return settings.STATS_BUFFER_TTL_DAYS * DAY_MS


def late_margin_ms() -> int:
    """A message for a day that closes within this margin counts as late (clock skew)."""
    return settings.STATS_LATE_MARGIN_SECONDS * 1000


def _load() -> CountingConfig:
    row = StatsSettings.objects.filter(pk=1).first() or StatsSettings()
    allowed = [*shipped_allowed(), *lines_of(row.allowed_words)]
    profanity = (
        WordMatcher([*shipped_patterns(), *lines_of(row.extra_profanity)], allowed=allowed)
        if row.profanity_enabled
        else None
    )
    banned: list[BannedWordsRule] = []
    links: list[str] = []
    for rule in ViolationRule.objects.filter(enabled=True).order_by("pk"):
        if rule.kind == ViolationKind.BANNED_WORDS:
            matcher = WordMatcher(lines_of(rule.words))
            if matcher:
                banned.append(BannedWordsRule(rule.name, rule.severity, matcher))
        elif rule.kind == ViolationKind.NEW_MEMBER_LINK:
            links.append(rule.severity)
    return CountingConfig(
        store_text=row.store_message_text,
        new_member_days=row.new_member_days,
        profanity=profanity,
        banned=tuple(banned),
        link_severities=tuple(links),
        counter_ttl_ms=counter_ttl_ms(),
        buffer_ttl_ms=buffer_ttl_ms(),
        late_margin_ms=late_margin_ms(),
        compact=settings.STATE_KEY_LAYOUT == "compact",
    )
