"""Jobs of the chat rules."""

from __future__ import annotations

from typing import Any

from moderation.rules import fedban, reports
from moderation.rules.services import DELETE_JOB, delete_job
from telegram_bot.bot import get_client


def delete(payload: dict[str, Any], run: Any) -> None:
    delete_job(payload, get_client())


def report_delete(payload: dict[str, Any], run: Any) -> None:
    reports.delete_job(payload, get_client())


def report_notice(payload: dict[str, Any], run: Any) -> None:
    reports.notice_job(payload)


def fban(payload: dict[str, Any], run: Any) -> None:
    fedban.apply_job(payload, get_client())


def fban_join(payload: dict[str, Any], run: Any) -> None:
    fedban.join_job(payload, get_client())


JOB_HANDLERS = {
    fedban.JOB: fban,
    fedban.JOIN_JOB: fban_join,
    DELETE_JOB: delete,
    reports.DELETE_JOB: report_delete,
    reports.NOTICE_JOB: report_notice,
}
