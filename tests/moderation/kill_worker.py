"""A child process for the kill -9 test: handles one update against the fake Bot API (it is
killed while Telegram's answer is on its way)."""

from __future__ import annotations

import os
from typing import Any


def handle(
    base_url: str, url: str, prefix: str, db_name: str | None, update: dict[str, Any]
) -> None:
    os.environ["UPDATE_LIVENESS_TTL_SECONDS"] = "3"
    os.environ["UPDATE_CLAIM_TTL_SECONDS"] = "3600"
    from tests.contract.race_worker import setup_django

    setup_django(db_name)
    from django.conf import settings

    from tests.conftest import OWNER_ID, WEBHOOK_SECRET

    settings.TELEGRAM_API_BASE_URL = base_url
    settings.OWNER_TELEGRAM_ID = OWNER_ID
    settings.ADMIN_TELEGRAM_IDS = []
    settings.ALLOWED_CHAT_IDS = []
    settings.TELEGRAM_WEBHOOK_SECRET = WEBHOOK_SECRET
    from telegram_bot.pipeline.process import process_update
    from telegram_bot.state import open_store, override_store

    with override_store(open_store(url, prefix=prefix)):
        process_update(update)
