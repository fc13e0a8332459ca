from __future__ import annotations

from django.utils.translation import gettext_lazy

from telegram_bot import features


class ContentConfig(features.FeatureConfig):
    name = "content"
    verbose_name = gettext_lazy("Content")
    bot_handlers = "content.handlers"
    job_handlers = "content.tasks.JOB_HANDLERS"
    schedules = "content.schedules.SCHEDULES"
    overview_cards = "content.overview.content_cards"
    start_line = gettext_lazy("channel posts")
    privacy = "content.privacy"
    console_sections = {"posts": ("content.post",)}
