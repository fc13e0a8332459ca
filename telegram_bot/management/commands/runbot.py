"""``manage.py runbot``: long polling (getUpdates) into the same pipeline as the webhook.

The loop is ``telegram_bot.transport.polling.Poller``; this command reads its options, deletes
the webhook on request, and stops on SIGINT/SIGTERM after the update being handled (exit 0).
A webhook being set, another poller or a rejected token stop it with an explanation.
"""

from __future__ import annotations

import argparse
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import close_old_connections

from telegram_bot.bot import get_client
from telegram_bot.errors import InternalError, TelegramApiError
from telegram_bot.pipeline.router import get_router
from telegram_bot.transport.polling import (
    BACKOFF_BASE_SECONDS,
    Poller,
    PollingStopped,
    stop_on_signals,
)


class Command(BaseCommand):
    help = (
        "Receive updates by long polling (getUpdates) instead of a webhook and handle them "
        "like the webhook does. Ctrl-C or SIGTERM stops after the update being handled."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--poll-timeout",
            type=int,
            default=25,
            help="seconds each getUpdates waits for updates (0-300, default 25)",
        )
        parser.add_argument(
            "--once",
            action="store_true",
            help="one getUpdates round, then exit (non-zero if it did not complete)",
        )
        parser.add_argument(
            "--delete-webhook",
            action="store_true",
            help="delete the webhook first (getUpdates does not work while one is set)",
        )
        parser.add_argument(
            "--backoff-base", type=float, default=BACKOFF_BASE_SECONDS, help=argparse.SUPPRESS
        )

    def handle(self, *args: Any, **options: Any) -> None:
        poll_timeout = options["poll_timeout"]
        if not 0 <= poll_timeout <= 300:
            raise CommandError(f"--poll-timeout must be 0-300 seconds, got {poll_timeout}")
        if options["backoff_base"] <= 0:
            raise CommandError("--backoff-base must be positive")
        try:
            client = get_client()
        except InternalError as exc:  # no token configured
            raise CommandError(str(exc)) from None
        if options["delete_webhook"]:
            try:
                client.delete_webhook()
            except TelegramApiError as exc:
                raise CommandError(f"deleteWebhook failed: {exc}") from None
            self.stdout.write("Webhook deleted.")
        allowed = get_router().allowed_updates
        poller = Poller(
            client,
            allowed_updates=allowed,
            poll_timeout=poll_timeout,
            backoff_base=options["backoff_base"],
        )
        try:
            if options["once"]:
                handled = poller.run_once()
                poller.confirm()
                self.stdout.write(f"Handled {handled} update(s).")
                if poller.last_problem:
                    raise CommandError(poller.last_problem)
                return
            with stop_on_signals(poller):
                self.stdout.write(
                    f"Polling for {', '.join(allowed)} updates. Press Ctrl-C to stop."
                )
                self.stdout.flush()
                poller.run(between_rounds=close_old_connections)
                poller.confirm()
        except PollingStopped as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write("Stopped.")
