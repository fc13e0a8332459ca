"""Run due jobs in the foreground: once (cron, tests) or for a while (a dedicated worker)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from telegram_bot.jobs.runner import new_owner, run_due, run_for


class Command(BaseCommand):
    help = "Claim and run due jobs (the django-q2 tick does this every minute)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--seconds",
            type=float,
            default=0.0,
            help="keep running for this long (default: one round)",
        )
        parser.add_argument(
            "--lease-seconds",
            type=int,
            default=None,
            help="lease length for jobs claimed by this run",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        seconds, lease = options["seconds"], options["lease_seconds"]
        if seconds < 0 or (lease is not None and lease < 1):
            raise CommandError("--seconds must be >= 0 and --lease-seconds >= 1")
        owner = new_owner()
        if seconds:
            ran = run_for(seconds, owner=owner, lease_seconds=lease)
        else:
            ran = run_due(owner, lease_seconds=lease)
        self.stdout.write(f"ran {ran} job(s) as {owner}")
