"""Reads of the support app: tickets, conversations, reply targets, panel pages, timings."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.db.models import Avg, DurationField, ExpressionWrapper, F, QuerySet
from django.utils import timezone

from support.conf import PANEL_PAGE_SIZE, reopen_window
from support.models import Ticket, TicketBotMessage, TicketMessage


def ticket_get(ticket_id: int) -> Ticket | None:
    return Ticket.objects.filter(pk=ticket_id).first()


def ticket_by_number(*, bot_id: int, number: int) -> Ticket | None:
    return Ticket.objects.filter(bot_id=bot_id, number=number).first()


def ticket_by_topic(*, chat_id: int, topic_id: int) -> Ticket | None:
    """The ticket whose topic in the staff group is ``topic_id``."""
    return Ticket.objects.filter(topic_chat_id=chat_id, topic_id=topic_id).first()


def open_tickets_of(user_id: int) -> QuerySet[Ticket]:
    """The user's open tickets, newest first."""
    return Ticket.objects.filter(user_id=user_id, status=Ticket.Status.OPEN).order_by(
        "-created_at", "-number"
    )


def recently_closed_ticket(user_id: int) -> Ticket | None:
    """The user's most recently closed ticket, if it is still within the reopen window."""
    since = timezone.now() - reopen_window()
    return (
        Ticket.objects.filter(user_id=user_id, status=Ticket.Status.CLOSED, closed_at__gte=since)
        .order_by("-closed_at")
        .first()
    )


def reopenable(ticket: Ticket) -> bool:
    return ticket.closed_at is not None and ticket.closed_at >= timezone.now() - reopen_window()


def ticket_for_admin_message(*, chat_id: int, message_id: int) -> Ticket | None:
    """The ticket an admin's notification (or prompt) in ``chat_id`` belongs to."""
    link = (
        TicketBotMessage.objects.select_related("ticket")
        .filter(chat_id=chat_id, message_id=message_id, audience=TicketBotMessage.Audience.ADMIN)
        .first()
    )
    return link.ticket if link else None


def ticket_for_user_reply(*, chat_id: int, user_id: int, message_id: int) -> Ticket | None:
    """The user's ticket that a reply to ``message_id`` in their chat refers to.

    That is a bot message of the ticket (confirmation, answer, notice) or one of the user's own
    ticket messages. Tickets of other users never match.
    """
    link = (
        TicketBotMessage.objects.select_related("ticket")
        .filter(chat_id=chat_id, message_id=message_id, audience=TicketBotMessage.Audience.USER)
        .first()
    )
    if link is not None:
        return link.ticket if link.ticket.user_id == user_id else None
    own = (
        TicketMessage.objects.select_related("ticket")
        .filter(
            source_chat_id=chat_id,
            source_message_id=message_id,
            sender=TicketMessage.Sender.USER,
            ticket__user_id=user_id,
        )
        .first()
    )
    return own.ticket if own else None


def stale_deliveries(ticket: Ticket) -> QuerySet[TicketMessage]:
    """The ticket's entries whose send to the user is claimed by an attempt that is past its
    deadline without a result (presumed dead)."""
    return ticket.messages.filter(
        user_notified_at__isnull=True,
        delivery_uncertain=False,
        delivery_attempt_token__isnull=False,
        delivery_attempt_deadline__lte=timezone.now(),
    )


@dataclass(frozen=True)
class Page:
    tickets: list[Ticket]
    number: int
    pages: int
    total: int


def open_tickets_page(page: int, *, size: int = PANEL_PAGE_SIZE) -> Page:
    """One page of all open tickets, newest first (a page past the end shows the last one)."""
    queryset = Ticket.objects.filter(status=Ticket.Status.OPEN).order_by("-created_at", "-number")
    total = queryset.count()
    pages = max(1, -(-total // size))
    number = min(max(1, page), pages)
    start = (number - 1) * size
    return Page(list(queryset[start : start + size]), number, pages, total)


def conversation(ticket: Ticket) -> list[TicketMessage]:
    return list(ticket.messages.order_by("created_at", "id"))


def last_entries(ticket: Ticket, count: int) -> list[TicketMessage]:
    entries = list(ticket.messages.order_by("-created_at", "-id")[:count])
    return entries[::-1]


@dataclass(frozen=True)
class Timings:
    first_response: timedelta | None
    resolution: timedelta | None
    answered: int
    resolved: int


def average_timings(tickets: QuerySet[Ticket]) -> Timings:
    """Average first-response time (answered tickets) and resolution time (closed tickets)."""
    response = ExpressionWrapper(F("first_response_at") - F("created_at"), DurationField())
    resolution = ExpressionWrapper(F("closed_at") - F("created_at"), DurationField())
    answered = tickets.filter(first_response_at__isnull=False)
    resolved = tickets.filter(closed_at__isnull=False)
    return Timings(
        first_response=answered.aggregate(value=Avg(response))["value"],
        resolution=resolved.aggregate(value=Avg(resolution))["value"],
        answered=answered.count(),
        resolved=resolved.count(),
    )
