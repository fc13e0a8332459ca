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
    audit_phrases = {
        "post.create": gettext_lazy("{actor} wrote {target}"),
        "post.edit": gettext_lazy("{actor} edited {target}"),
        "post.schedule": gettext_lazy("{actor} scheduled {target}"),
        "post.unschedule": gettext_lazy("{actor} unscheduled {target}"),
        "post.publish": gettext_lazy("{actor} published {target}"),
        "post.mark_published": gettext_lazy("{actor} marked {target} as published"),
        "post.archive": gettext_lazy("{actor} archived {target}"),
        "post.archive_delete": gettext_lazy(
            "{actor} archived {target} and deleted it from the channel"
        ),
        "post.delete": gettext_lazy("{actor} deleted {target}"),
    }
