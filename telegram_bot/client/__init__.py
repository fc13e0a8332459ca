"""The single Telegram Bot API client (DESIGN section 5). Only this package talks to Telegram."""

from __future__ import annotations

from telegram_bot.client.core import (
    DEFAULT_BASE_URL,
    DEFAULT_TIMEOUT,
    MAX_CALL_SECONDS,
    TelegramClient,
    telegram_error,
)

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_TIMEOUT",
    "MAX_CALL_SECONDS",
    "TelegramClient",
    "telegram_error",
]
