"""Child process of the notice-job kill test: runs due jobs against the fake Bot API and is
killed (SIGKILL) by the parent while its send is in flight (started with the spawn method)."""

from __future__ import annotations

from tests.contract.race_worker import setup_django


def run_jobs(db_name: str, base_url: str) -> None:
    setup_django(db_name)
    from django.conf import settings

    settings.TELEGRAM_API_BASE_URL = base_url
    from telegram_bot.jobs.runner import run_due

    run_due("doomed-worker")
