"""Schedules of the content app, reconciled by `manage.py sync_schedules`."""

from __future__ import annotations

from telegram_bot.scheduling import ScheduleSpec

SCHEDULES: list[ScheduleSpec] = [
    ScheduleSpec(name="content_reconcile", func="content.tasks.content_reconcile", minutes=10),
]
