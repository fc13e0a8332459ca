"""Schedules of the stats app, reconciled by `manage.py sync_schedules`."""

from __future__ import annotations

from telegram_bot.scheduling import ScheduleSpec

SCHEDULES: list[ScheduleSpec] = []
