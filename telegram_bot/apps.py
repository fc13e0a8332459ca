from __future__ import annotations

from django.apps import AppConfig


class TelegramBotConfig(AppConfig):
    name = "telegram_bot"
    verbose_name = "Telegram bot"

    def ready(self) -> None:
        from telegram_bot import checks  # noqa: F401 - registers the system checks
