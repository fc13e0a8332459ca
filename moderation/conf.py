"""Reading a chat's moderation settings on the message path without a database query each
time: a small in-process cache (``CACHE_SECONDS``), dropped in this process when a row is saved.
Another process sees a change within ``CACHE_SECONDS``."""

from __future__ import annotations

import threading
import time

from cachetools import TTLCache
from django.db.models.signals import post_delete, post_save

from moderation.models import ChatSettings

CACHE_SECONDS = 30.0
CACHE_SIZE = 2048


def _clock() -> float:
    return time.monotonic()


# A chat's settings, kept CACHE_SECONDS; the least recently read go first past CACHE_SIZE.
_cache: TTLCache[int, ChatSettings] = TTLCache(
    CACHE_SIZE,
    CACHE_SECONDS,
    timer=lambda: _clock(),  # looked up per call: tests move it
)
_lock = threading.Lock()  # a TTLCache is not thread-safe, and a read reorders it


def chat_settings(chat_id: int) -> ChatSettings:
    """The chat's settings (an unsaved row with the defaults when it has none)."""
    try:
        with _lock:
            return _cache[chat_id]  # one look at the clock; .get() takes two
    except KeyError:
        pass
    found = ChatSettings.objects.filter(chat_id=chat_id).first() or ChatSettings(chat_id=chat_id)
    with _lock:
        _cache[chat_id] = found
    return found


def log_chat(chat_id: int) -> int | None:
    """The chat's own log channel (the audit log posts every entry of the chat there)."""
    return chat_settings(chat_id).log_chat_id


def forget(chat_id: int | None = None) -> None:
    with _lock:
        if chat_id is None:
            _cache.clear()
        else:
            _cache.pop(chat_id, None)


def _on_change(sender: type, instance: ChatSettings, **kwargs: object) -> None:
    forget(instance.chat_id)


def connect_signals() -> None:
    post_save.connect(_on_change, sender=ChatSettings, dispatch_uid="moderation-settings-save")
    post_delete.connect(_on_change, sender=ChatSettings, dispatch_uid="moderation-settings-del")
