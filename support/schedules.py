"""Schedules of the support app, reconciled by `manage.py sync_schedules`."""

from __future__ import annotations

from telegram_bot.scheduling import ScheduleSpec

SCHEDULES: list[ScheduleSpec] = [
    # Each ticket is reminded once per wait (a conditional UPDATE), whoever runs the tick.
    ScheduleSpec(
        name="support_remind_waiting", func="support.tasks.remind_waiting_tick", minutes=1
    ),
]
