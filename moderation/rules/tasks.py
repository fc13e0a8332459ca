"""Jobs of the chat rules."""

from __future__ import annotations

from typing import Any

from moderation.rules import reports
from moderation.rules.services import DELETE_JOB, delete_job
from telegram_bot.bot import get_client


def delete(payload: dict[str, Any], run: Any) -> None:
    delete_job(payload, get_client())


def report_delete(payload: dict[str, Any], run: Any) -> None:
    reports.delete_job(payload, get_client())


def report_notice(payload: dict[str, Any], run: Any) -> None:
    reports.notice_job(payload)


JOB_HANDLERS = {
    DELETE_JOB: delete,
    reports.DELETE_JOB: report_delete,
    reports.NOTICE_JOB: report_notice,
}
