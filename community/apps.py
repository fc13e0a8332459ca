from __future__ import annotations

from telegram_bot import features


class CommunityConfig(features.FeatureConfig):
    name = "community"
    verbose_name = "Community"
    bot_handlers = "community.handlers"
    job_handlers = "community.tasks.JOB_HANDLERS"
    schedules = "community.schedules.SCHEDULES"
    api_module = "community.api"
    start_line = "members (join requests, welcome, captcha)"
    key_families = {
        "members": "members' stays per chat (joined/left, welcomed, captcha), anti-raid "
        "join counters and strict mode, the last welcome",
        "cap": "captcha challenges by token (who, the right button, the outcome), 2 days",
    }

    def ready(self) -> None:
        super().ready()
        from community.insights import growth
        from telegram_bot import insights

        # The statistics dashboard shows growth next to activity without importing this app.
        insights.offer("community.growth", growth)
