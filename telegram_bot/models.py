"""Models of the telegram_bot app (each lives beside the code that owns it)."""

from __future__ import annotations

from telegram_bot.state.models import KVEntry

__all__ = ["KVEntry"]
