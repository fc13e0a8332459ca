"""``manage.py set_webhook URL``: register the webhook with Telegram, then show what Telegram says.

The secret (``TELEGRAM_WEBHOOK_SECRET``) and the allowed update types (derived from the router)
are always sent. Nothing printed ever contains the bot token or the webhook secret.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from telegram_bot.bot import get_client
from telegram_bot.errors import TelegramApiError
from telegram_bot.pipeline.router import get_router
from telegram_bot.redaction import redact

WEBHOOK_PORTS = (443, 80, 88, 8443)  # the only ports Telegram delivers to


class Command(BaseCommand):
    help = (
        "Register URL as the bot's webhook (HTTPS only) with the configured secret and the "
        "update types the router handles, then print what getWebhookInfo reports."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("url", help="public HTTPS URL of /telegram/webhook")
        parser.add_argument(
            "--max-connections",
            type=int,
            default=None,
            help="simultaneous HTTPS connections Telegram may open, 1-100 (Telegram's default 40)",
        )
        parser.add_argument(
            "--drop-pending-updates",
            action="store_true",
            help="drop the updates waiting on Telegram's side",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        url = validate_url(options["url"])
        max_connections = options["max_connections"]
        if max_connections is not None and not 1 <= max_connections <= 100:
            raise CommandError(f"--max-connections must be 1-100, got {max_connections}")
        require_setting("TELEGRAM_BOT_TOKEN")
        secret = require_setting("TELEGRAM_WEBHOOK_SECRET")
        allowed_updates = get_router().allowed_updates
        client = get_client()
        try:
            client.set_webhook(
                url=url,
                secret_token=secret,
                allowed_updates=allowed_updates,
                max_connections=max_connections,
                drop_pending_updates=options["drop_pending_updates"] or None,
            )
            info = client.get_webhook_info()
        except TelegramApiError as exc:
            raise CommandError(telegram_failure(exc)) from None
        self.stdout.write(safe(f"Webhook set: {url}"))
        write_webhook_info(self.stdout.write, info)
        if info.get("url") != url:
            self.stderr.write(safe(f"Warning: Telegram reports the URL {info.get('url')!r}"))


def validate_url(url: str) -> str:
    """The URL if Telegram can deliver to it; a CommandError saying why not otherwise."""
    parts = urlsplit(url.strip())
    if parts.scheme.lower() != "https" or not parts.hostname:
        raise CommandError(
            f"the webhook URL must be https://<host>/... (Telegram requires HTTPS), "
            f"got {safe(url)!r}"
        )
    try:
        port = 443 if parts.port is None else parts.port  # port 0 is not 443
    except ValueError:
        raise CommandError(f"the webhook URL has an invalid port: {safe(url)!r}") from None
    if port not in WEBHOOK_PORTS:
        raise CommandError(
            f"Telegram delivers webhooks only to ports 443, 80, 88 and 8443, got {port}"
        )
    return url.strip()


def require_setting(name: str) -> str:
    value = str(getattr(settings, name, "") or "")
    if not value:
        raise CommandError(f"{name} is not set: set it in the environment first")
    return value


def telegram_failure(exc: TelegramApiError) -> str:
    """Telegram's answer for an operator (the exception text never holds the token)."""
    code = exc.error_code or exc.status
    detail = exc.description or str(exc)
    return safe(f"Telegram refused {exc.method}: {detail}" + (f" (error {code})" if code else ""))


def safe(text: str) -> str:
    """``text`` without the bot token or the webhook secret, whatever put them there."""
    secrets = [
        str(getattr(settings, name, "") or "")
        for name in ("TELEGRAM_BOT_TOKEN", "TELEGRAM_WEBHOOK_SECRET")
    ]
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[REDACTED]")
    return redact(text)


def write_webhook_info(write: Callable[[str], object], info: dict[str, Any]) -> None:
    """Print the WebhookInfo fields an operator checks, one ``name: value`` a line."""
    allowed = info.get("allowed_updates")
    lines = {
        "url": info.get("url") or "(none)",
        "pending_update_count": info.get("pending_update_count", 0),
        "last_error_message": info.get("last_error_message") or "none",
        "allowed_updates": ", ".join(allowed) if allowed else "(Telegram's default)",
    }
    if info.get("max_connections") is not None:
        lines["max_connections"] = info["max_connections"]
    for name, value in lines.items():
        write(safe(f"{name}: {value}"))
