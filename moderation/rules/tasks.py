"""Jobs of the chat rules."""

from __future__ import annotations

from typing import Any

from moderation.rules.services import DELETE_JOB, delete_job
from telegram_bot.bot import get_client


def delete(payload: dict[str, Any], run: Any) -> None:
    delete_job(payload, get_client())


JOB_HANDLERS = {DELETE_JOB: delete}
