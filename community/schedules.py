"""Schedules of the community app, reconciled by `manage.py sync_schedules`."""

from __future__ import annotations

from telegram_bot.scheduling import ScheduleSpec

SCHEDULES: list[ScheduleSpec] = [
    # Once a day; a second run the same UTC day only updates that day's figure.
    ScheduleSpec(
        name="community_member_counts", func="community.tasks.member_counts_tick", minutes=24 * 60
    ),
]
