"""``manage.py erase_user <telegram id> --yes``: erase or anonymise everything about one user."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from telegram_bot.audit import Actor
from telegram_bot.privacy import ErasureDeferred, check_user_id, erase_user


class Command(BaseCommand):
    help = (
        "Erase or anonymise everything the installed apps hold about one Telegram user "
        "(docs/privacy.md). Safe to run again, also after it was interrupted."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("user_id", help="the Telegram user id")
        parser.add_argument("--yes", action="store_true", help="confirm: this cannot be undone")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            user_id = check_user_id(options["user_id"])
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if not options["yes"]:
            raise CommandError("Erasure cannot be undone: run it again with --yes.")
        try:
            result = erase_user(user_id, actor=Actor(None, "manage.py erase_user"), source="admin")
        except ErasureDeferred as exc:
            raise CommandError(f"Not erased yet: {exc}. Run it again in a few minutes.") from None
        self.stdout.write(f"Erased: {result.summary or 'nothing was held'}.")
