"""Who a ticket is assigned to, by name: ``Ticket.assignee`` stores ``tg:<Telegram id>`` or
``site:<username>`` (stable ids); operators read the name the answer was signed with."""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import CharField, Max, OuterRef, QuerySet, Subquery, Value
from django.db.models.functions import Cast, Concat

from support.models import Ticket, TicketMessage
from telegram_bot.models import BotAdmin
from telegram_bot.numbers import ascii_int


def with_assignee_names(tickets: QuerySet[Ticket]) -> QuerySet[Ticket]:
    """Annotate ``assignee_name``: the name the assignee signed their first answer with (who
    answers first becomes the assignee, ``support.services.ticket_reply``); None when the
    assignee has not answered (assigned with /assign)."""
    first_answer = (
        TicketMessage.objects.filter(
            ticket=OuterRef("pk"), sender=TicketMessage.Sender.ADMIN, internal=False
        )
        .exclude(kind=TicketMessage.Kind.EVENT)
        # Only the assignee's own answer names them: /assign may have given the ticket to
        # someone else than who answered first.
        .annotate(label=Concat(Value("tg:"), Cast("author_id", CharField())))
        .filter(label=OuterRef("assignee"))
        .order_by("created_at", "id")
        .values("author_name")[:1]
    )
    return tickets.annotate(assignee_name=Subquery(first_answer))


def assignee_names(labels: Iterable[str]) -> dict[str, str]:
    """``{label: name}`` for assignee labels, in two queries whatever their number: the name
    a Telegram admin last signed an answer with (else their bot-admin name), an operator's
    username."""
    labels = set(labels)
    telegram_ids = {
        number
        for label in labels
        if label.startswith("tg:") and (number := ascii_int(label[3:])) is not None
    }
    signed: dict[int, str] = {}
    if telegram_ids:
        answers = TicketMessage.objects.filter(
            sender=TicketMessage.Sender.ADMIN, author_id__in=telegram_ids
        ).exclude(author_name="")
        latest = answers.values("author_id").annotate(last=Max("id")).values("last")
        signed = dict(
            TicketMessage.objects.filter(pk__in=latest).values_list("author_id", "author_name")
        )
        missing = telegram_ids - set(signed)
        if missing:
            admins = BotAdmin.objects.filter(telegram_id__in=missing).exclude(display_name="")
            signed.update(admins.values_list("telegram_id", "display_name"))
    return {label: assignee_name(label, signed) for label in labels}


def assignee_name(label: str, signed: dict[int, str] | None = None) -> str:
    kind, _, value = label.partition(":")
    if kind == "tg" and ascii_int(value) is not None:
        return (signed or {}).get(int(value)) or f"Telegram user {value}"
    if kind == "site" and value:
        return value
    return label
