"""Support's personal data: the tickets a user opened and what they wrote, the answers of an
admin. Erasure keeps each ticket and its number (the desk's figures stay) and removes the
content and the people. See ``telegram_bot.privacy``."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from support import staff
from support.models import Ticket, TicketBotMessage, TicketMessage
from telegram_bot.privacy import Subject, new_anonymous_id
from telegram_bot.state import KVStore

MODELS = {
    "support.Ticket": "the user who opened a ticket: id, private chat, name, the subject",
    "support.TicketMessage": "the conversation: texts, files, authors' ids and names",
    "support.TicketBotMessage": "ids of the bot's messages in the user's or an admin's chat",
}
KEY_FAMILIES: dict[str, str] = {}
NOT_PERSONAL = {
    "support.TicketCounter": "the last ticket number of the bot",
    "support.CannedReply": "saved answers written by the operators",
}
ERASED = "(erased)"


def export(user_id: int, store: KVStore) -> dict[str, Any]:
    tickets = Ticket.objects.filter(user_id=user_id).order_by("created_at")
    return {
        "tickets": [
            {
                "number": ticket.number,
                "status": ticket.status,
                "subject": ticket.subject,
                "user_name": ticket.user_name,
                "created_at": ticket.created_at,
                "closed_at": ticket.closed_at,
                "rating": ticket.rating,
                "messages": list(
                    ticket.messages.values(
                        "created_at",
                        "sender",
                        "kind",
                        "event",
                        "internal",
                        "text",
                        "file_name",
                        "author_name",
                    )
                ),
            }
            for ticket in tickets
        ],
        "answers_written": list(
            TicketMessage.objects.filter(author_id=user_id)
            .exclude(ticket__user_id=user_id)
            .values("ticket__number", "created_at", "text", "file_name")
        ),
    }


NOT_DELIVERED_ERASED = "not delivered: the user's data was erased"


@transaction.atomic
def erase(subject: Subject, store: KVStore) -> dict[str, int]:
    user, anon = subject.user_id, subject.anonymous_id
    # Their tickets by id: the querysets below run after the tickets are given the anonymous
    # id, which a filter on the user's id would then no longer find.
    ticket_ids = list(
        Ticket.objects.filter(Q(user_id=user) | Q(chat_id=user)).values_list("pk", flat=True)
    )
    tickets = Ticket.objects.filter(pk__in=ticket_ids)
    messages = TicketMessage.objects.filter(ticket__in=ticket_ids)
    _delete_topics(tickets)
    # What was still to be sent to them is not sent any more (a support.deliver job waiting
    # out a 429 would send the blanked answer to the anonymous id): a final error, which
    # neither the job nor the claim takes.
    messages.filter(user_notified_at__isnull=True, delivery_uncertain=False).update(
        delivery_error=NOT_DELIVERED_ERASED, delivery_attempt_token=None
    )
    counts = {
        "messages": messages.exclude(text="", file_id="", file_name="", author_name="").update(
            text="", file_id="", file_name="", author_name="", author_id=None, media_group_id=""
        ),
        "bot_messages": TicketBotMessage.objects.filter(
            Q(ticket__in=tickets) | Q(chat_id=user)
        ).delete()[0],
        "tickets": tickets.update(user_id=anon, chat_id=anon, user_name="", subject=ERASED),
    }
    messages.update(source_chat_id=None, source_message_id=None, author_id=None)
    # An admin's own answers in other people's tickets: the text is the ticket's, the author not.
    counts["answers"] = TicketMessage.objects.filter(author_id=user).update(
        author_id=anon, author_name=""
    )
    TicketMessage.objects.filter(source_chat_id=user).update(
        source_chat_id=None, source_message_id=None
    )
    Ticket.objects.filter(assignee=f"tg:{user}").update(assignee=f"tg:{anon}")
    return counts


def purge(store: KVStore) -> dict[str, int]:
    """Closed tickets older than ``SUPPORT_CLOSED_TICKET_RETENTION_DAYS`` lose their content
    and their user, like an erasure; their numbers and times stay for the desk's figures."""
    cutoff = timezone.now() - timedelta(days=settings.SUPPORT_CLOSED_TICKET_RETENTION_DAYS)
    with transaction.atomic():
        # Not yet purged, or erased and then given content (nothing should, but a purge that
        # skipped erased tickets for good would keep whatever did).
        kept = TicketMessage.objects.exclude(text="", file_id="", file_name="", author_name="")
        old = Ticket.objects.filter(status=Ticket.Status.CLOSED, closed_at__lt=cutoff).filter(
            ~Q(subject=ERASED) | Q(pk__in=kept.values("ticket_id"))
        )
        ids = list(old.values_list("pk", flat=True))
        TicketMessage.objects.filter(ticket_id__in=ids).update(
            text="",
            file_id="",
            file_name="",
            author_name="",
            author_id=None,
            source_chat_id=None,
            source_message_id=None,
        )
        TicketBotMessage.objects.filter(ticket_id__in=ids).delete()
        _delete_topics(Ticket.objects.filter(pk__in=ids))
        # Each old ticket gets an anonymous user of its own (they may be different people).
        for pk in ids:
            anon = new_anonymous_id()
            Ticket.objects.filter(pk=pk).update(
                user_id=anon, chat_id=anon, user_name="", subject=ERASED
            )
    return {"tickets": len(ids)}


def _delete_topics(tickets: QuerySet[Ticket]) -> None:
    """The tickets' topics in the staff group hold copies of the person's messages: unlinked
    now, deleted from the group once the transaction commits (deleteForumTopic; a group that
    refuses it keeps the topic, and the log says so)."""
    linked = tickets.filter(topic_id__isnull=False, topic_chat_id__isnull=False)
    topics = [
        (int(chat_id), int(topic_id))
        for chat_id, topic_id in linked.values_list("topic_chat_id", "topic_id")
        if chat_id is not None and topic_id is not None
    ]
    if not topics:
        return
    tickets.filter(topic_id__isnull=False).update(topic_id=None)
    transaction.on_commit(lambda: staff.delete_topics(topics))
