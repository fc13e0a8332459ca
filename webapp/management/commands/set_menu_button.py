"""``manage.py set_menu_button``: the bot's menu button opens the Mini App (setChatMenuButton,
for every private chat with the bot), at ``MINIAPP_PUBLIC_URL``; ``--remove`` puts back
Telegram's default (the list of commands)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from telegram_bot.bot import get_client
from telegram_bot.errors import TelegramApiError

MAX_TEXT = 64


class Command(BaseCommand):
    help = "Set the bot's menu button to open the Mini App (MINIAPP_PUBLIC_URL)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--text", default="Settings", help="the button's text (1-64 chars)")
        parser.add_argument("--remove", action="store_true", help="back to the commands menu")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["remove"]:
            button: dict[str, Any] = {"type": "commands"}
        else:
            text = str(options["text"]).strip()
            if not 1 <= len(text) <= MAX_TEXT:
                raise CommandError(f"--text must be 1 to {MAX_TEXT} characters")
            url = settings.MINIAPP_PUBLIC_URL
            if not url:
                raise CommandError(
                    "MINIAPP_PUBLIC_URL is not set: the Mini App's https address, e.g. "
                    "https://bot.example.org/app/"
                )
            button = {"type": "web_app", "text": text, "web_app": {"url": url}}
        try:
            get_client().call("setChatMenuButton", menu_button=button)
        except TelegramApiError as exc:
            raise CommandError(f"Telegram refused the menu button: {exc.description}") from None
        self.stdout.write(f"menu button: {button['type']}")
