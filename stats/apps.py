from __future__ import annotations

from django.utils.translation import gettext_lazy

from telegram_bot import features


class StatsConfig(features.FeatureConfig):
    name = "stats"
    verbose_name = gettext_lazy("Statistics")
    bot_handlers = "stats.handlers"
    schedules = "stats.schedules.SCHEDULES"
    api_module = "stats.api"
    overview_cards = "stats.overview.stats_cards"
    start_line = gettext_lazy("statistics")
    privacy = "stats.privacy"
    metrics = "stats.metrics.collect"
    chat_titles = "stats.selectors.chat_titles"
    chats = "stats.selectors.counted_chats"
    people_names = "stats.selectors.people_names"
    chat_figures = "stats.overview.stats_chat_figures"
    # Who wrote when, for community's retention of new members.
    insight_active_users = "stats.insights.active_users"
    member_page = "stats-member"
    console_sections = {
        "safety": ("stats.violationrule",),
        "statistics": ("view:stats-today-by-chat", "view:stats-dashboard"),
        "settings": ("stats.statssettings",),
        "system": ("stats.dailycoverage", "stats.backfillstate", "stats.dailyuserstat"),
    }
    key_families = {
        "msg": "raw message buffer, minimal fields, 7 days",
        "stats": "daily counters per chat, day and user; poison marks, joins, chat titles",
        "activity": "daily message total per chat",
        "last_message": "time of a user's last message in a chat",
    }

    def ready(self) -> None:
        super().ready()
        from stats.services import message_violations
        from telegram_bot import violations

        # The banned-word and link rules are this app's; moderation acts on what they find.
        violations.register_classifier("stats", message_violations)
