"""Reads of the broadcasts app: a segment's subscribers, a broadcast's progress."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, QuerySet

from broadcasts.models import (
    Broadcast,
    BroadcastRecipient,
    ChatMembership,
    RecipientStatus,
    Subscriber,
    SubscriberStatus,
)
from telegram_bot.models import BlockedChat


def segment(broadcast: Broadcast) -> QuerySet[Subscriber]:
    """The active subscribers the broadcast is for; a chat another feature found blocked (a
    403 to an admin notice, a support answer) is left out until its user writes again."""
    blocked = BlockedChat.objects.filter(chat_id__gt=0).values("chat_id")
    found = Subscriber.objects.filter(status=SubscriberStatus.ACTIVE).exclude(user_id__in=blocked)
    if broadcast.segment_language:
        found = found.filter(language__iexact=broadcast.segment_language)
    if broadcast.segment_joined_since is not None:
        found = found.filter(joined_at__gte=broadcast.segment_joined_since)
    if broadcast.segment_chat_id is not None:
        members = ChatMembership.objects.filter(
            chat_id=broadcast.segment_chat_id, is_member=True
        ).values("user_id")
        found = found.filter(user_id__in=members)
    return found


@dataclass(frozen=True)
class Progress:
    total: int
    sent: int
    blocked: int
    failed: int
    unknown: int
    cancelled: int
    left: int  # to send or being sent

    @property
    def done(self) -> int:
        return self.total - self.left


def progress(broadcast_id: int) -> Progress:
    counts = dict(
        BroadcastRecipient.objects.filter(broadcast_id=broadcast_id)
        .values_list("status")
        .annotate(n=Count("pk"))
        .values_list("status", "n")
    )
    return Progress(
        total=sum(counts.values()),
        sent=counts.get(RecipientStatus.SENT, 0),
        blocked=counts.get(RecipientStatus.BLOCKED, 0),
        failed=counts.get(RecipientStatus.FAILED, 0),
        unknown=counts.get(RecipientStatus.UNKNOWN, 0),
        cancelled=counts.get(RecipientStatus.CANCELLED, 0),
        left=counts.get(RecipientStatus.PENDING, 0) + counts.get(RecipientStatus.SENDING, 0),
    )
