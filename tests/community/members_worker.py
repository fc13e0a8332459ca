"""Child process of the captcha restart test (started with the spawn method): a job worker
that runs the due jobs against the fake Bot API and the database KV store."""

from __future__ import annotations

from tests.contract.race_worker import setup_django


def run_due_jobs(db_name: str, base_url: str) -> None:
    setup_django(db_name)
    from django.conf import settings
    from django.db import connections

    from telegram_bot.jobs.runner import new_owner, run_due
    from telegram_bot.state import open_store, override_store

    settings.TELEGRAM_API_BASE_URL = base_url
    with override_store(open_store("db://")):
        run_due(new_owner())
    connections.close_all()
