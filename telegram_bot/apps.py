from __future__ import annotations

from django.utils.translation import gettext_lazy

from telegram_bot import features


class TelegramBotConfig(features.FeatureConfig):
    """The core contributes /start, /help, /panel and admin management, its own job kinds
    and schedules (KV purge, the jobs tick, cleanup); its key families are declared in
    ``telegram_bot.state.keys``."""

    name = "telegram_bot"
    verbose_name = gettext_lazy("Telegram bot")
    bot_handlers = "telegram_bot.handlers"
    job_handlers = "telegram_bot.tasks.JOB_HANDLERS"
    schedules = "telegram_bot.schedules.SCHEDULES"
    overview_cards = "telegram_bot.ops.overview_cards.core_cards"
    privacy = "telegram_bot.privacy.core"
    chat_settings_models = ("telegram_bot.ChatPreference",)

    def ready(self) -> None:
        super().ready()
        from telegram_bot.admins import connect_signals

        connect_signals()
        from telegram_bot.ops import checks  # noqa: F401 - registers the system checks
