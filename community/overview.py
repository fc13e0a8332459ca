"""The community's cards on the admin overview: members who joined and left today (against
yesterday by the same time), and the join requests waiting for a decision."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from urllib.parse import urlencode

from django.db.models import Count, Q
from django.urls import reverse
from django.utils.translation import gettext as _

from community.models import MemberMovement
from community.records import RECORD_PREFIX, JoinRequestRecord
from telegram_bot.overview import (
    Card,
    ChatCount,
    ChatFigure,
    capped,
    day_bounds,
    local_today,
    same_time_yesterday,
    versus_yesterday,
)
from telegram_bot.state import get_store

# Join requests are counted from one page of their records: beyond this the card says "100+".
JOIN_REQUEST_CAP = 100


def community_cards(user: Any) -> list[Card]:
    cards = []
    if user.has_perm("community.view_membermovement"):
        cards.extend(_movement_cards())
    if user.is_superuser or user.has_perm("community.view_chatpolicy"):
        cards.append(_join_request_card())
    return cards


def _movement_cards() -> list[Card]:
    """One query: joins and leaves of today so far and of yesterday up to the same time, in
    the TIME_ZONE setting. Each card opens the list of exactly today's movements of its kind."""
    today = local_today()
    start, _end = day_bounds(today - timedelta(days=1))
    middle, end = day_bounds(today)
    cutoff = same_time_yesterday()
    counts = MemberMovement.objects.filter(at__gte=start, at__lt=end).aggregate(
        joins_today=Count("pk", filter=Q(kind="join", at__gte=middle)),
        joins_yesterday=Count("pk", filter=Q(kind="join", at__lt=cutoff)),
        leaves_today=Count("pk", filter=Q(kind="leave", at__gte=middle)),
        leaves_yesterday=Count("pk", filter=Q(kind="leave", at__lt=cutoff)),
    )
    changelist = (
        f"{reverse('admin:community_membermovement_changelist')}?"
        f"{urlencode({'at__gte': middle.isoformat(), 'at__lt': end.isoformat()})}&"
    )
    return [
        Card(
            key="new-members",
            order=30,
            title=_("New members today"),
            value=f"{counts['joins_today']:,}",
            detail=versus_yesterday(counts["joins_today"], counts["joins_yesterday"]),
            url=f"{changelist}kind__exact=join",
        ),
        Card(
            key="departed-members",
            order=40,
            title=_("Departed members today"),
            value=f"{counts['leaves_today']:,}",
            detail=versus_yesterday(counts["leaves_today"], counts["leaves_yesterday"]),
            url=f"{changelist}kind__exact=leave",
        ),
    ]


def community_chat_figures(user: Any) -> list[ChatFigure]:
    """Joins and leaves today so far against yesterday by the same time, per chat (one
    query), each opening the list of exactly that chat's movements of today
    (``FeatureConfig.chat_figures``)."""
    if not user.has_perm("community.view_membermovement"):
        return []
    today = local_today()
    start, _end = day_bounds(today - timedelta(days=1))
    middle, end = day_bounds(today)
    cutoff = same_time_yesterday()
    rows = (
        MemberMovement.objects.filter(at__gte=start, at__lt=end)
        .values("chat_id")
        .annotate(
            joins_today=Count("pk", filter=Q(kind="join", at__gte=middle)),
            joins_yesterday=Count("pk", filter=Q(kind="join", at__lt=cutoff)),
            leaves_today=Count("pk", filter=Q(kind="leave", at__gte=middle)),
            leaves_yesterday=Count("pk", filter=Q(kind="leave", at__lt=cutoff)),
        )
    )
    changelist = reverse("admin:community_membermovement_changelist")
    joins: dict[int, ChatCount] = {}
    leaves: dict[int, ChatCount] = {}
    for row in rows:
        chat_id = row["chat_id"]
        for kind, found in (("join", joins), ("leave", leaves)):
            today_count, yesterday_count = row[f"{kind}s_today"], row[f"{kind}s_yesterday"]
            if not (today_count or yesterday_count):
                continue
            query = {
                "at__gte": middle.isoformat(),
                "at__lt": end.isoformat(),
                "kind__exact": kind,
                "chat_id__exact": chat_id,
            }
            found[chat_id] = ChatCount(
                today_count, yesterday_count, f"{changelist}?{urlencode(query)}"
            )
    return [
        ChatFigure("joins", _("New members"), joins, order=30),
        ChatFigure("leaves", _("Departed members"), leaves, order=40),
    ]


def _join_request_card() -> Card:
    """Two store calls: one page of the records' keys, then their values."""
    store = get_store()
    keys, cursor = store.scan(RECORD_PREFIX, None, JOIN_REQUEST_CAP)
    records = [JoinRequestRecord.from_json(raw) for raw in store.get_many(keys)] if keys else []
    pending = sum(1 for record in records if record is not None and record.pending)
    return Card(
        key="join-requests",
        order=60,
        title=_("Pending join requests"),
        value=capped(pending, cursor is not None),
        detail=_("decide here or in Telegram: /panel, Join requests"),
        alert=pending > 0,
        url=reverse("admin:community-join-requests"),
    )
