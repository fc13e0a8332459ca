"""What the audit log records of the support desk's operator actions: the ticket (its user
is "on whom") and, for an answer, whether it reached the user."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from support.delivery import Delivery
from support.models import Ticket
from telegram_bot.audit import Actor, Step, audit_step
from telegram_bot.audit.admin import admin_actor

if TYPE_CHECKING:
    from support.services import Incoming


def _target(ticket: Ticket | None) -> dict[str, Any]:
    if ticket is None:  # gone: the action fails, and says why
        return {"target_name": "a ticket that does not exist"}
    return {"target_id": ticket.user_id, "target_name": f"ticket #{ticket.number}"}


def admin_site_step(request: Any, ticket: Ticket, action: str) -> AbstractContextManager[Step]:
    """An action of the ticket page in the admin site."""
    return audit_step(action, actor=admin_actor(request), source="admin", **_target(ticket))


def incoming_step(
    incoming: Incoming, ticket: Ticket | None, action: str, *, source: str
) -> AbstractContextManager[Step]:
    """An action taken in Telegram, as the support conversation sees it; once per update."""
    return audit_step(
        action,
        actor=Actor(incoming.user_id, incoming.user_name),
        source=source,
        chat_id=incoming.chat_id,
        update_id=incoming.update_id,
        **_target(ticket),
    )


def note_delivery(step: Step, result: Delivery) -> None:
    """A message the user did not get (and that is not retried) makes the action failed."""
    if result.delivered is False and not result.retrying and not result.uncertain:
        step.failed(f"not delivered: {result.error}")
    elif result.uncertain:
        step.detail = f"delivery uncertain: {result.error}"
    elif result.retrying:
        step.detail = f"delivery retried: {result.error}"
