"""Schedules of the broadcasts app, reconciled by `manage.py sync_schedules`."""

from __future__ import annotations

from telegram_bot.scheduling import ScheduleSpec

SCHEDULES: list[ScheduleSpec] = [
    ScheduleSpec(
        name="broadcasts_reconcile", func="broadcasts.tasks.broadcasts_reconcile", minutes=10
    ),
]
