from __future__ import annotations

from django.utils.translation import gettext_lazy

from telegram_bot import features


class BroadcastsConfig(features.FeatureConfig):
    name = "broadcasts"
    verbose_name = gettext_lazy("Broadcasts")
    bot_handlers = "broadcasts.handlers"
    job_handlers = "broadcasts.tasks.JOB_HANDLERS"
    schedules = "broadcasts.schedules.SCHEDULES"
    privacy = "broadcasts.privacy"
    start_line = gettext_lazy("news for subscribers (/stop to opt out)")
    console_sections = {"broadcasts": ("broadcasts.broadcast", "broadcasts.subscriber")}
    audit_phrases = {
        "broadcast.preview": gettext_lazy("{actor} sent a preview of {target}"),
        "broadcast.start": gettext_lazy("{actor} started {target}"),
        "broadcast.pause": gettext_lazy("{actor} paused {target}"),
        "broadcast.resume": gettext_lazy("{actor} resumed {target}"),
        "broadcast.cancel": gettext_lazy("{actor} cancelled {target}"),
    }
