"""Jobs of the moderation app."""

from __future__ import annotations

from typing import Any

from moderation.services import JOB_KIND, perform_job
from telegram_bot.bot import get_client


def act(payload: dict[str, Any], run: Any) -> None:
    perform_job(payload, get_client())


JOB_HANDLERS = {JOB_KIND: act}
