"""Job handlers of the support app (thin: load, call the service)."""

from __future__ import annotations

from typing import Any

from support import delivery
from support.models import TicketMessage
from telegram_bot.jobs.runner import JobRun


def deliver_job(payload: dict[str, Any], run: JobRun) -> None:
    """Send the user a ticket message whose delivery failed transiently (429, 5xx, network),
    or settle an attempt that did not come back (see ``delivery.redeliver``)."""
    entry_id = int(payload.get("entry_id") or 0)
    entry = TicketMessage.objects.select_related("ticket").filter(pk=entry_id).first()
    if entry is None:
        return  # the ticket was deleted meanwhile
    delivery.redeliver(entry, final=run.last_attempt)


def admin_notice_sent_job(payload: dict[str, Any], run: JobRun) -> None:
    """An admin's notice of an entry arrived late (the core retried it): link it."""
    delivery.admin_notice_arrived(
        entry_id=int(payload["entry_id"]),
        chat_id=int(payload["chat_id"]),
        message_id=int(payload["message_id"]),
    )


JOB_HANDLERS = {
    delivery.RETRY_JOB: deliver_job,
    delivery.ADMIN_NOTICE_SENT_JOB: admin_notice_sent_job,
}
