"""What the audit log records of an admin's decision on a join request: the request's chat and
requester, and Telegram's outcome."""

from __future__ import annotations

from community import services
from telegram_bot.audit import Step

_FAILED = (services.RESULT_FAILED, services.RESULT_CLOSED)
_REFUSED = (services.RESULT_ALREADY, services.RESULT_STALE)


def note_decision(step: Step, result: services.DecideResult) -> None:
    """Fill in the step from the decision: where, on whom, and whether it was carried out."""
    record = result.record
    if record is not None:
        step.fields.update(
            chat_id=record.chat_id, target_id=record.user_id, target_name=record.user_name
        )
    if result.kind in _FAILED:
        step.failed(result.message)
    elif result.kind in _REFUSED:
        step.refused(result.message)
    elif result.kind == services.RESULT_RETRYING:
        step.detail = "Telegram asked to wait: retried by a job"
