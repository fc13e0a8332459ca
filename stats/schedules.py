"""Schedules of the stats app, reconciled by `manage.py sync_schedules`.

The schedule is only a trigger: the backfill takes its own lease on ``stats_backfill_state``,
so two clusters firing at once do not run it twice.
"""

from __future__ import annotations

from telegram_bot.scheduling import ScheduleSpec

SCHEDULES: list[ScheduleSpec] = [
    ScheduleSpec(name="stats_backfill", func="stats.tasks.backfill_tick", minutes=1),
    # Late messages for closed days: re-verified within a minute or two (stats.reconcile).
    ScheduleSpec(name="stats_reconcile", func="stats.tasks.reconcile_tick", minutes=1),
    # Closed months whose member sums a write dropped and no verification stored again (an
    # erasure): read from rows, slower, until this stores them (stats.member_months).
    ScheduleSpec(name="stats_month_sums", func="stats.tasks.month_sums_tick", minutes=360),
]
