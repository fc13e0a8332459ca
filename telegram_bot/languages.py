"""Which language the bot answers in: the user's Telegram ``language_code`` when it is one of
``LANGUAGES`` (``ru-RU`` counts as ``ru``), else the chat's preference (``ChatPreference``),
else ``LANGUAGE_CODE``.

The pipeline activates it around each update (``for_update``). A chat's preference is cached in
the process for ``CHAT_CACHE_SECONDS`` so that group chatter costs no query per message (a
change made in the admin site is seen at once by the process that saved it, by the others
within the minute). Texts sent later (jobs) use ``recipient_language``: the language the user
last wrote to the bot with (``lang:<user id>``, remembered from private chats, button presses
and join requests, written when it changes and at most once a minute, kept ``REMEMBER_DAYS``),
else the chat's, else the default.
"""

from __future__ import annotations

import functools
import threading
import time
from typing import Any

from cachetools import TTLCache
from django.conf import settings
from django.utils import translation
from django.utils.functional import Promise

from telegram_bot.state import KVStore
from telegram_bot.updates import Update

CHAT_CACHE_SECONDS = 60.0
CACHE_LIMIT = 10_000
REMEMBER_DAYS = 180
REWRITE_SECONDS = 60.0


def _clock() -> float:
    return time.monotonic()


# A chat's preferred language ("" for none), kept CHAT_CACHE_SECONDS.
_chat_cache: TTLCache[int, str] = TTLCache(CACHE_LIMIT, CHAT_CACHE_SECONDS, timer=_clock)
# What this process last stored under lang:<user id>: it writes on a change, and again once
# its note is older than REWRITE_SECONDS. Another process may have stored another language
# since (the user wrote from a second device): the note is trusted that long only.
_remembered: TTLCache[int, str] = TTLCache(CACHE_LIMIT, REWRITE_SECONDS, timer=_clock)
# The caches are shared by a web worker's threads; a read reorders them too.
_lock = threading.Lock()


def supported(code: str | None) -> str | None:
    """The site language ``code`` names (``ru``, ``ru-RU``, ``RU_ru`` -> ``ru``), or None."""
    if not code:
        return None
    return _supported(code, tuple(language for language, _name in settings.LANGUAGES))


@functools.lru_cache(maxsize=256)
def _supported(code: str, codes: tuple[str, ...]) -> str | None:
    # Cached: every update asks, with a handful of distinct codes.
    code = code.strip().lower().replace("_", "-")
    if code in codes:
        return code
    base = code.split("-", 1)[0]
    return base if base in codes else None


def default_language() -> str:
    return settings.LANGUAGE_CODE


def operators_language() -> translation.override:
    """For texts every admin shares (one stored copy, edited for all): ``LANGUAGE_CODE``."""
    return translation.override(default_language())


def chat_language(chat_id: int) -> str:
    """The chat's language (its ChatPreference, else ``LANGUAGE_CODE``), cached a minute."""
    with _lock:
        language = _chat_cache.get(chat_id)
    if language is None:
        from telegram_bot.models import ChatPreference

        language = (
            ChatPreference.objects.filter(chat_id=chat_id)
            .values_list("language", flat=True)
            .first()
        ) or ""
        with _lock:
            _chat_cache[chat_id] = language
    return supported(language) or default_language()


def forget_chat(chat_id: int) -> None:
    """Drop the cached preference (the chat's preference was saved or deleted)."""
    with _lock:
        _chat_cache.pop(chat_id, None)


def for_update(store: KVStore, update: Update) -> str:
    """The language to answer ``update`` in; remembers the user's for later sends (not for
    group messages: a private chat, a button or a join request comes first anyway)."""
    user = update.user
    language = supported(user.language_code) if user is not None else None
    if language is not None and user is not None:
        if not (update.type == "message" and update.chat_type in ("group", "supergroup")):
            remember(store, user.id, language)
        return language
    if update.chat_id is not None and update.chat_type != "private":
        return chat_language(update.chat_id)
    return default_language()


def remember(store: KVStore, user_id: int, language: str) -> None:
    with _lock:
        if _remembered.get(user_id) == language:
            return
    store.set(_key(user_id), language, REMEMBER_DAYS * 24 * 3600 * 1000)
    with _lock:
        _remembered[user_id] = language


def recipient_language(
    store: KVStore, *, user_id: int | None = None, chat_id: int | None = None
) -> str:
    """The language for a text sent later to ``user_id`` (the one they last wrote with) or to
    ``chat_id`` (its preference); else ``LANGUAGE_CODE``."""
    if user_id is not None:
        stored = store.get(_key(user_id))
        known = supported(stored) if isinstance(stored, str) else None
        if known is not None:
            return known
    if chat_id is not None and chat_id != user_id:
        return chat_language(chat_id)
    return default_language()


def plain(value: Any) -> Any:
    """``value`` with lazy translations (a button label declared at import time) turned into
    the text they are in the active language (dicts and lists walked)."""
    if isinstance(value, Promise):
        return str(value)
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


def forget_all() -> None:
    """Empty the process caches (tests: rows and keys vanish with each test)."""
    with _lock:
        _chat_cache.clear()
        _remembered.clear()


def remembered(store: KVStore, user_id: int) -> str | None:
    """The language remembered for ``user_id`` (a privacy export), or None."""
    value = store.get(_key(user_id))
    return value if isinstance(value, str) else None


def forget(store: KVStore, user_id: int) -> int:
    """Delete the language remembered for ``user_id`` (an erasure); 1 if there was one."""
    _remembered.pop(user_id, None)
    had = store.get(_key(user_id)) is not None
    store.delete(_key(user_id))
    return int(had)


def _key(user_id: int) -> str:
    return f"lang:{user_id}"
