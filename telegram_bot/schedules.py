"""Schedules declared by the core; reconciled into django-q2 by ``manage.py sync_schedules``."""

from __future__ import annotations

from telegram_bot.scheduling import ScheduleSpec

SCHEDULES = [
    ScheduleSpec(name="kv_purge_expired", func="telegram_bot.tasks.kv_purge_expired", minutes=10),
    ScheduleSpec(name="jobs_tick", func="telegram_bot.tasks.jobs_tick", minutes=1),
    ScheduleSpec(name="jobs_cleanup", func="telegram_bot.tasks.jobs_cleanup", minutes=60 * 6),
    ScheduleSpec(
        name="privacy_retention", func="telegram_bot.tasks.privacy_retention", minutes=60 * 24
    ),
]
