"""The production gate: every check of seed 003 section 29 that code can verify."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from telegram_bot.ops.production import CHECKS, check_results
from telegram_bot.redaction import redact


class Command(BaseCommand):
    help = "Check that this deployment is ready for production; exit 1 if anything is not."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--offline",
            action="store_true",
            help="skip the checks that ask Telegram (token, webhook)",
        )
        parser.add_argument(
            "--url",
            help="send the smoke test's update to this deployment (https://host) over HTTP "
            "instead of through this process",
        )
        parser.add_argument(
            "--only",
            action="append",
            metavar="NAME",
            help="run only this check (repeatable), e.g. --only 'worker heartbeat'",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        names = [check.name for check in CHECKS]
        unknown = sorted(set(options["only"] or []) - set(names))
        if unknown:
            raise CommandError(f"no such check: {', '.join(unknown)} (checks: {', '.join(names)})")
        url = options["url"]
        if url and not url.startswith(("http://", "https://")):
            raise CommandError("--url must start with http:// or https://")
        results = check_results(offline=options["offline"], only=options["only"], base_url=url)
        for result in results:
            mark = "FAIL" if result.problem is not None else "warn" if result.warning else "ok  "
            reason = result.detail if result.problem is None else result.problem
            detail = f": {redact(reason)}" if reason else ""
            self.stdout.write(f"[{mark}] {result.name}{detail}")
        failed = [result.name for result in results if result.problem is not None]
        if failed:
            raise CommandError(f"not ready for production: {len(failed)} check(s) failed")
        self.stdout.write("ready for production")
