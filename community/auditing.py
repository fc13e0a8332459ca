"""What the audit log records of an admin's decision on a join request: the request's chat and
requester, and Telegram's outcome."""

from __future__ import annotations

from community.services import join_decisions
from telegram_bot.audit import Step

_FAILED = (join_decisions.RESULT_FAILED, join_decisions.RESULT_CLOSED)
_REFUSED = (join_decisions.RESULT_ALREADY, join_decisions.RESULT_STALE)


def note_decision(step: Step, result: join_decisions.DecideResult) -> None:
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
    elif result.kind == join_decisions.RESULT_RETRYING:
        step.detail = "Telegram asked to wait: retried by a job"
