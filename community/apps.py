from __future__ import annotations

from telegram_bot import features


class CommunityConfig(features.FeatureConfig):
    name = "community"
    verbose_name = "Community"
    bot_handlers = "community.handlers"
    job_handlers = "community.tasks.JOB_HANDLERS"
    schedules = "community.schedules.SCHEDULES"
    start_line = "join requests"
