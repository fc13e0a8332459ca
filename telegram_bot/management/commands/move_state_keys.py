"""``manage.py move_state_keys``: move an existing deployment's KV keys to the format that
carries the bot's id (``STATE_KEYS_BY_BOT``), while the bot keeps serving updates."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from telegram_bot.errors import StateError
from telegram_bot.state import get_store, scoping_bot
from telegram_bot.state.scoping import MoveReport, move_keys


class Command(BaseCommand):
    help = (
        "Move the KV keys written without the bot's id (before STATE_KEYS_BY_BOT) to their "
        "names with it, one atomic step per key (merged with what traffic wrote meanwhile: "
        "counters added, done-markers kept). Safe to run while the bot serves updates, to "
        "stop and to run again; when nothing is left it tells every process to stop looking "
        "for the old names."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--dry-run", action="store_true", help="count the keys to move, by family; move none"
        )
        parser.add_argument(
            "--page",
            type=int,
            default=1000,
            help="keys listed per call to the store (1-10000, default 1000)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        page = options["page"]
        if not 1 <= page <= 10_000:
            raise CommandError(f"--page must be 1-10000, got {page}")
        if not settings.STATE_KEYS_BY_BOT:
            raise CommandError("STATE_KEYS_BY_BOT is off: the keys stay as they are")
        bot = scoping_bot()
        if bot is None:
            raise CommandError("TELEGRAM_BOT_TOKEN is not set: the bot's id scopes the keys")
        store = get_store()
        dry = options["dry_run"]

        def progress(moved: int) -> None:
            self.stdout.write(f"  {moved} keys moved so far")

        try:
            report = move_keys(store, dry_run=dry, page=page, progress=progress)
        except StateError as exc:
            raise CommandError(f"the KV store failed, run the command again: {exc}") from None
        self._write(report, bot, dry=dry)
        if not dry and not report.finished:
            raise CommandError(
                f"keys of the old format were still appearing after {report.passes} passes: "
                "is a process of the previous version still running? Stop it and run again."
            )

    def _write(self, report: MoveReport, bot: int, *, dry: bool) -> None:
        verb = ("to rename", "to merge") if dry else ("renamed", "merged")
        where = f"{get_store().url.split('@')[-1]} (bot {bot})"
        self.stdout.write(f"{'Dry run: ' if dry else ''}{where}")
        families = sorted(set(report.renamed) | set(report.merged))
        for family in families:
            self.stdout.write(
                f"  {family}: {report.renamed[family]} {verb[0]}, {report.merged[family]} {verb[1]}"
            )
        total = sum(report.renamed.values()), sum(report.merged.values())
        self.stdout.write(f"total: {total[0]} {verb[0]}, {total[1]} {verb[1]}")
        if not dry and report.finished:
            self.stdout.write(
                "Finished: no key of the old format is left; every process stops reading "
                "the old names within seconds."
            )
