"""``manage.py delete_webhook``: remove the webhook (needed before ``runbot`` can poll)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from telegram_bot.bot import get_client
from telegram_bot.errors import TelegramApiError
from telegram_bot.management.commands.set_webhook import (
    require_setting,
    telegram_failure,
    write_webhook_info,
)


class Command(BaseCommand):
    help = (
        "Remove the bot's webhook (getUpdates / runbot only work without one), then print "
        "what getWebhookInfo reports."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--drop-pending-updates",
            action="store_true",
            help="also drop the updates waiting on Telegram's side",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        require_setting("TELEGRAM_BOT_TOKEN")
        client = get_client()
        try:
            client.delete_webhook(drop_pending_updates=options["drop_pending_updates"] or None)
            info = client.get_webhook_info()
        except TelegramApiError as exc:
            raise CommandError(telegram_failure(exc)) from None
        self.stdout.write("Webhook deleted.")
        write_webhook_info(self.stdout.write, info)
