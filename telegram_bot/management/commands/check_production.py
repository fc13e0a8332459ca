"""The production gate: every check of seed 003 section 29 that code can verify."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from telegram_bot.production import run_checks
from telegram_bot.redaction import redact


class Command(BaseCommand):
    help = "Check that this deployment is ready for production; exit 1 if anything is not."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--offline",
            action="store_true",
            help="skip the checks that ask Telegram (token, webhook)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        results = run_checks(offline=options["offline"])
        for name, problem in results:
            mark = "ok  " if problem is None else "FAIL"
            detail = "" if problem is None else f": {redact(problem)}"
            self.stdout.write(f"[{mark}] {name}{detail}")
        failed = [name for name, problem in results if problem is not None]
        if failed:
            raise CommandError(f"not ready for production: {len(failed)} check(s) failed")
        self.stdout.write("ready for production")
