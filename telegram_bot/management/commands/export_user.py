"""``manage.py export_user <telegram id>``: everything held about one user, as one JSON file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from telegram_bot.audit import Actor
from telegram_bot.privacy import check_user_id
from telegram_bot.privacy.files import export_json


class Command(BaseCommand):
    help = "Write everything the installed apps hold about one Telegram user to a JSON file."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("user_id", help="the Telegram user id")
        parser.add_argument(
            "--output", "-o", help="the file to write (default user-<id>.json; - for stdout)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            user_id = check_user_id(options["user_id"])
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        actor = Actor(None, "manage.py export_user")
        output = options["output"] or f"user-{user_id}.json"
        if output == "-":
            self.stdout.write(export_json(user_id, actor=actor, source="admin"))
            return
        path = Path(output)
        try:  # created here, readable by its owner only: it is one person's data
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            raise CommandError(f"{path} exists; choose another --output.") from None
        except OSError as exc:
            raise CommandError(f"cannot write {path}: {exc.strerror}") from None
        # Audited once the file is there to write to: a refused --output exported nothing.
        try:
            document = export_json(user_id, actor=actor, source="admin")
        except BaseException:
            os.close(fd)
            path.unlink(missing_ok=True)
            raise
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                file.write(document + "\n")
        except OSError as exc:  # a full disk: no partial file left to be read as the whole
            path.unlink(missing_ok=True)
            raise CommandError(f"cannot write {path}: {exc.strerror}") from None
        except BaseException:
            path.unlink(missing_ok=True)
            raise
        self.stdout.write(f"Wrote {path}.")
