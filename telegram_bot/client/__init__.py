"""The single Telegram Bot API client. Only this package talks to Telegram."""

from __future__ import annotations

from telegram_bot.client.core import (
    DEFAULT_BASE_URL,
    DEFAULT_TIMEOUT,
    MAX_CALL_SECONDS,
    TelegramClient,
    telegram_error,
)
from telegram_bot.client.files import FileStream
from telegram_bot.client.limiter import (
    SEND_METHODS,
    Limits,
    OutgoingLimiter,
    bulk_sends,
    slot_taken,
)
from telegram_bot.client.limits import (
    CAPTION_LIMIT,
    SEND_PERMISSIONS,
    SEND_WINDOW_SECONDS,
    TEXT_LIMIT,
    clip,
)

__all__ = [
    "CAPTION_LIMIT",
    "DEFAULT_BASE_URL",
    "DEFAULT_TIMEOUT",
    "MAX_CALL_SECONDS",
    "SEND_METHODS",
    "SEND_PERMISSIONS",
    "SEND_WINDOW_SECONDS",
    "TEXT_LIMIT",
    "FileStream",
    "Limits",
    "OutgoingLimiter",
    "TelegramClient",
    "bulk_sends",
    "clip",
    "slot_taken",
    "telegram_error",
]
