from __future__ import annotations

from telegram_bot import features


class SupportConfig(features.FeatureConfig):
    name = "support"
    verbose_name = "Support"
    bot_handlers = "support.handlers"
    job_handlers = "support.tasks.JOB_HANDLERS"
    schedules = "support.schedules.SCHEDULES"
    overview_cards = "support.overview.support_cards"
    start_line = "support"
    privacy = "support.privacy"
