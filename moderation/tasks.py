"""Jobs of the moderation app."""

from __future__ import annotations

from typing import Any

from moderation.services import JOB_KIND, LOG_JOB_KIND, mirror_job, perform_job
from telegram_bot.bot import get_client


def act(payload: dict[str, Any], run: Any) -> None:
    perform_job(payload, get_client())


def log(payload: dict[str, Any], run: Any) -> None:
    mirror_job(payload, get_client())


JOB_HANDLERS = {JOB_KIND: act, LOG_JOB_KIND: log}
