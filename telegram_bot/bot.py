"""The process-wide Telegram client, built from settings (the client package itself has no
Django). Keyed on token and base URL, so a test that overrides the settings gets a new one."""

from __future__ import annotations

import threading
import time

from cachetools import TTLCache
from django.conf import settings

from telegram_bot.client import Limits, OutgoingLimiter, TelegramClient
from telegram_bot.errors import InternalError, TelegramApiError
from telegram_bot.state import KVStore, get_store, open_store
from telegram_bot.state.database import DatabaseStore

_clients: dict[tuple[str, str, Limits | None], TelegramClient] = {}
_lock = threading.Lock()


def get_client() -> TelegramClient:
    """The shared client for ``TELEGRAM_BOT_TOKEN`` at ``TELEGRAM_API_BASE_URL``, paced by
    the outgoing limiter (``OUTGOING_*`` settings) unless ``OUTGOING_LIMITS`` is off."""
    token, base_url = settings.TELEGRAM_BOT_TOKEN, settings.TELEGRAM_API_BASE_URL
    if not token:
        raise InternalError("TELEGRAM_BOT_TOKEN is not set: the bot cannot call Telegram")
    limits = outgoing_limits()
    key = (token, base_url, limits)
    client = _clients.get(key)
    if client is None:
        with _lock:
            client = _clients.get(key)
            if client is None:
                limiter = None if limits is None else OutgoingLimiter(_LimiterStore(), limits)
                client = _clients[key] = TelegramClient(token, base_url, limiter=limiter)
    return client


def outgoing_limits() -> Limits | None:
    """The outgoing limits from the settings (validated at start), None when they are off."""
    if not settings.OUTGOING_LIMITS:
        return None
    return Limits(
        per_second=settings.OUTGOING_PER_SECOND,
        private_chat_per_second=settings.OUTGOING_PRIVATE_CHAT_PER_SECOND,
        group_per_minute=settings.OUTGOING_GROUP_PER_MINUTE,
        bulk_share=settings.OUTGOING_BULK_SHARE_PERCENT / 100,
        max_wait=float(settings.OUTGOING_MAX_WAIT_SECONDS),
    )


def outgoing_limiter() -> OutgoingLimiter | None:
    """The limiter every send of this process waits in (None: limits off)."""
    return get_client().limiter


# The embedded default's limiter counts in this process only (its KV table would put a write
# transaction of SQLite in front of every send); with Redis every process shares the counts.
_process_store: KVStore | None = None


class _LimiterStore:
    """The limiter's store, looked up on each use: the state layer's Redis store when the KV
    state is in Redis (or a test's store), else one in-process memory store."""

    def _store(self) -> KVStore:
        global _process_store
        store = get_store()
        if not isinstance(store, DatabaseStore):
            return store
        if _process_store is None:
            _process_store = open_store("memory://")
        return _process_store

    def get_many(self, keys: list[str]) -> list[object]:
        return self._store().get_many(keys)

    def compare_and_set(
        self, key: str, expected: object, value: object, ttl_ms: int | None = None
    ) -> bool:
        return self._store().compare_and_set(key, expected, value, ttl_ms)


def bot_id() -> int | None:
    """The bot's own user id (the public part of the token), without a network call."""
    token = settings.TELEGRAM_BOT_TOKEN
    return int(token.split(":", 1)[0]) if token else None


_username: dict[str, str] = {}
USERNAME_RETRY_SECONDS = 60.0


def _clock() -> float:
    return time.monotonic()


# Tokens whose getMe failed within the last USERNAME_RETRY_SECONDS.
_username_unknown: TTLCache[str, bool] = TTLCache(8, USERNAME_RETRY_SECONDS, timer=_clock)
_username_lock = threading.Lock()


def bot_username() -> str | None:
    """The bot's @username (from getMe, asked once per process); None if Telegram won't say.

    After a failed getMe the answer is None for a minute: while Telegram is down, group
    commands with a mention must not each wait for another getMe.
    """
    token = settings.TELEGRAM_BOT_TOKEN
    if token in _username:
        return _username[token]
    with _username_lock:
        if token in _username_unknown:
            return None
    try:
        username = str(get_client().get_me().get("username") or "")
    except TelegramApiError:
        with _username_lock:
            _username_unknown[token] = True
        return None
    _username[token] = username
    return username
