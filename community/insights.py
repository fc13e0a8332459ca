"""What the community app offers other apps through the core's insights registry
(``telegram_bot.insights``): ``community.growth``, joins, leaves and member counts per day."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import Any

from django.db.models import Count
from django.db.models.functions import TruncDate

from community.models import MemberCount, MemberMovement


def growth(
    chat_id: int, start: date, end: date, *, zone: tzinfo | None = None
) -> list[dict[str, Any]]:
    """Every day of ``start..end`` (inclusive, in ``zone``, default UTC):
    ``{"date", "joins", "leaves", "members"}``. Joins and leaves are counted by their time in
    the zone; ``members`` is the count fetched on that (UTC) day, None when none was."""
    zone = zone or UTC
    since = datetime.combine(start, time.min, tzinfo=zone)
    until = datetime.combine(end + timedelta(days=1), time.min, tzinfo=zone)
    moves = (
        MemberMovement.objects.filter(
            # ``day`` (UTC, indexed) bounds the rows; ``at`` picks the zone's days.
            chat_id=chat_id,
            day__gte=start - timedelta(days=1),
            day__lte=end + timedelta(days=1),
            at__gte=since,
            at__lt=until,
        )
        .annotate(local=TruncDate("at", tzinfo=zone))
        .values("local", "kind")
        .annotate(n=Count("id"))
    )
    counted = {(row["local"], row["kind"]): row["n"] for row in moves}
    counts = dict(
        MemberCount.objects.filter(chat_id=chat_id, day__gte=start, day__lte=end).values_list(
            "day", "count"
        )
    )
    days = []
    day = start
    while day <= end:
        days.append(
            {
                "date": day,
                "joins": counted.get((day, MemberMovement.Kind.JOIN), 0),
                "leaves": counted.get((day, MemberMovement.Kind.LEAVE), 0),
                "members": counts.get(day),
            }
        )
        day += timedelta(days=1)
    return days
