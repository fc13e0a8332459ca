"""Telegram handlers of the content app (routes are added with the feature)."""

from __future__ import annotations

from telegram_bot.router import PanelEntry, Route

ROUTES: list[Route] = []
PANEL_ENTRIES: list[PanelEntry] = []
