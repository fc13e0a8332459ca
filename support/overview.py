"""The support desk's cards on the admin overview: open tickets and the oldest waiting one."""

from __future__ import annotations

from typing import Any

from django.db.models import OuterRef, Subquery
from django.urls import reverse
from django.utils.translation import gettext as _

from support.models import Ticket, TicketMessage
from telegram_bot.overview import Card, age


def support_cards(user: Any) -> list[Card]:
    """Two queries: the open tickets, and the oldest one whose last message is the user's."""
    if not user.has_perm("support.view_ticket"):
        return []
    open_tickets = Ticket.objects.filter(status=Ticket.Status.OPEN)
    count = open_tickets.count()
    waiting = _oldest_waiting(open_tickets) if count else None
    if waiting is None:
        detail = _("none waiting for an answer") if count else _("none open")
    else:
        detail = _("oldest waiting: #%(number)s, %(age)s") % {
            "number": waiting.number,
            "age": age(waiting.last_user_message_at),
        }
    changelist = reverse("admin:support_ticket_changelist")
    return [
        Card(
            key="open-tickets",
            order=50,
            title=_("Open tickets"),
            value=f"{count:,}",
            detail=detail,
            url=f"{changelist}?status__exact=open",
            alert=waiting is not None,
        )
    ]


def _oldest_waiting(open_tickets: Any) -> Ticket | None:
    """The open ticket that has waited longest since its user wrote last without an answer
    after it (events such as a reopening, and staff notes, do not count as answers)."""
    last = TicketMessage.objects.filter(ticket=OuterRef("pk"), internal=False).exclude(
        kind=TicketMessage.Kind.EVENT
    )
    last = last.order_by("-created_at", "-id")
    ticket: Ticket | None = (
        open_tickets.annotate(
            last_sender=Subquery(last.values("sender")[:1]),
            last_user_message_at=Subquery(last.values("created_at")[:1]),
        )
        .filter(last_sender=TicketMessage.Sender.USER)
        .order_by("last_user_message_at")
        .first()
    )
    return ticket
