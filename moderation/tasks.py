"""Jobs of the moderation app."""

from __future__ import annotations

from typing import Any

from moderation.services import JOB_KIND, perform_job
from telegram_bot.audit import mirror
from telegram_bot.bot import get_client


def act(payload: dict[str, Any], run: Any) -> None:
    perform_job(payload, get_client())


def log(payload: dict[str, Any], run: Any) -> None:
    """Log-channel lines queued before the core took the mirror over (same payload)."""
    mirror(payload, get_client())


JOB_HANDLERS = {JOB_KIND: act, "moderation.log": log}
