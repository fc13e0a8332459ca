"""Job handlers of the support app (thin: load, call the service)."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext

from support import delivery, staff
from support.models import TicketMessage
from telegram_bot.jobs.runner import JobRun
from telegram_bot.privacy import ANONYMOUS_BASE


def deliver_job(payload: dict[str, Any], run: JobRun) -> None:
    """Send the user a ticket message whose delivery failed transiently (429, 5xx, network),
    or settle an attempt that did not come back (see ``delivery.redeliver``)."""
    entry_id = int(payload.get("entry_id") or 0)
    entry = TicketMessage.objects.select_related("ticket").filter(pk=entry_id).first()
    if entry is None:
        return  # the ticket was deleted meanwhile
    delivery.redeliver(entry, final=run.last_attempt)


def _deliver_rerun_refusal(payload: dict[str, Any]) -> str | None:
    """The job sends only an entry whose last failure was transient: a given-up, uncertain,
    delivered or erased one it would skip while reporting success."""
    entry = (
        TicketMessage.objects.select_related("ticket")
        .filter(pk=int(payload.get("entry_id") or 0))
        .first()
    )
    if entry is None or entry.user_notified_at is not None:
        return gettext("the message was delivered, or its ticket is gone")
    if entry.ticket.chat_id >= ANONYMOUS_BASE:
        return gettext("the ticket's user was erased")
    if entry.delivery_uncertain or not entry.delivery_error.endswith(delivery.RETRYING):
        return gettext('use the ticket\'s "Retry delivery" instead')
    return None


deliver_job.rerun_refusal = _deliver_rerun_refusal  # type: ignore[attr-defined]


def admin_notice_sent_job(payload: dict[str, Any], run: JobRun) -> None:
    """An admin's notice of an entry arrived late (the core retried it): link it."""
    delivery.admin_notice_arrived(
        entry_id=int(payload["entry_id"]),
        chat_id=int(payload["chat_id"]),
        message_id=int(payload["message_id"]),
    )


def remind_waiting_tick() -> int:
    """The ``support_remind_waiting`` schedule: remind about tickets waiting too long."""
    return staff.remind_waiting()


JOB_HANDLERS = {
    delivery.RETRY_JOB: deliver_job,
    delivery.ADMIN_NOTICE_SENT_JOB: admin_notice_sent_job,
}
