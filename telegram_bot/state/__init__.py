"""The state layer: one KV contract, three backends, typed stores on top.

Only this package touches Redis or the ``kv_store`` table. Everything else asks ``get_store()``
for the process-wide store (chosen by ``settings.KV_STORE_URL``) or opens one by URL. The
process-wide store writes the bot's id into every key (``session:<bot>:<chat>:<user>``,
``state.scoping``) unless ``STATE_KEYS_BY_BOT`` is off; callers name keys without it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

from telegram_bot.errors import StateError
from telegram_bot.state.base import Increment, InvalidValueError, KVStore, Put
from telegram_bot.state.keys import FAMILIES, InvalidKeyError

__all__ = [
    "FAMILIES",
    "Increment",
    "InvalidKeyError",
    "InvalidValueError",
    "KVStore",
    "Put",
    "get_store",
    "open_store",
    "override_store",
]

_default: KVStore | None = None
_default_lock = threading.Lock()


def open_store(url: str, *, prefix: str = "", bot: int | None = None) -> KVStore:
    """Open a store by URL: ``memory://``, ``db://`` (or ``db://<alias>``), ``redis://...``;
    ``bot``: the bot's id that scopes every key (None: unscoped)."""
    scheme = urlsplit(url).scheme.lower()
    if scheme == "memory":
        from telegram_bot.state.memory import MemoryStore

        return MemoryStore(prefix=prefix, bot=bot)
    if scheme == "db":
        from telegram_bot.state.database import DatabaseStore

        alias = urlsplit(url).netloc or "default"
        return DatabaseStore(alias=alias, prefix=prefix, bot=bot)
    if scheme in ("redis", "rediss", "unix"):
        from telegram_bot.state.redis import RedisStore

        return RedisStore.from_url(url, prefix=prefix, bot=bot)
    raise InvalidValueError(
        f"unknown KV store URL {url.split('@')[-1]!r}: use memory://, db:// or redis://"
    )


def get_store() -> KVStore:
    """The process-wide store for ``settings.KV_STORE_URL``, opened once."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = _open_default()
    return _default


def _open_default() -> KVStore:
    from django.conf import settings

    from telegram_bot.state import scoping

    # A Redis store has a client and pool of its own, not django-redis's: the state's
    # timeouts and retry policy (``state.redis.client_options``) are not the cache's.
    store = open_store(settings.KV_STORE_URL, bot=scoping_bot())
    try:
        scoping.settle(store)
    except StateError as exc:  # asked again at the next opening; meanwhile reads both formats
        logging.getLogger(__name__).warning("KV store: cannot tell its key format: %s", exc)
    return store


def scoping_bot() -> int | None:
    """The bot id the process-wide store scopes its keys by: the public part of
    ``TELEGRAM_BOT_TOKEN`` when ``STATE_KEYS_BY_BOT`` is on (no token: no bot, unscoped)."""
    from django.conf import settings

    token = settings.TELEGRAM_BOT_TOKEN
    if not settings.STATE_KEYS_BY_BOT or not token:
        return None
    return int(token.partition(":")[0])


@contextmanager
def override_store(store: KVStore) -> Iterator[KVStore]:
    """Make ``store`` the process-wide store for the duration (tests, tools)."""
    global _default
    previous = _default
    _default = store
    try:
        yield store
    finally:
        _default = previous
