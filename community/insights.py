"""What the community app offers other apps through the core's insights
(``telegram_bot.insights``): ``GROWTH``, joins, leaves and member counts per day."""

from __future__ import annotations

from datetime import date, tzinfo
from typing import Any

from community.growth import growth_days
from telegram_bot.insights import Growth

# Who may see joins, leaves and member counts, wherever they are shown: this app's API and any
# app that shows growth (the statistics' report reads it from the provider).
PERMISSION = "community.view_membermovement"


def growth(
    chat_id: int, start: date, end: date, *, zone: tzinfo | None = None
) -> list[dict[str, Any]]:
    """Every day of ``start..end`` (inclusive, in ``zone``, default UTC):
    ``{"date", "joins", "leaves", "members"}``. Joins and leaves are counted by their time in
    the zone; ``members`` is the count fetched on that (UTC) day, None when none was."""
    return [
        {"date": d.day, "joins": d.joins, "leaves": d.leaves, "members": d.member_count}
        for d in growth_days(chat_id, start, end, zone=zone)
    ]


GROWTH = Growth(days=growth, permission=PERMISSION)
