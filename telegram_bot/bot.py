"""The process-wide Telegram client, built from settings (the client package itself has no
Django). Keyed on token and base URL, so a test that overrides the settings gets a new one."""

from __future__ import annotations

import threading
import time

from cachetools import TTLCache
from django.conf import settings

from telegram_bot.client import TelegramClient
from telegram_bot.errors import InternalError, TelegramApiError

_clients: dict[tuple[str, str], TelegramClient] = {}
_lock = threading.Lock()


def get_client() -> TelegramClient:
    """The shared client for ``TELEGRAM_BOT_TOKEN`` at ``TELEGRAM_API_BASE_URL``."""
    token, base_url = settings.TELEGRAM_BOT_TOKEN, settings.TELEGRAM_API_BASE_URL
    if not token:
        raise InternalError("TELEGRAM_BOT_TOKEN is not set: the bot cannot call Telegram")
    key = (token, base_url)
    client = _clients.get(key)
    if client is None:
        with _lock:
            client = _clients.get(key)
            if client is None:
                client = _clients[key] = TelegramClient(token, base_url)
    return client


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
