"""What the stats app offers other apps through the core's insights registry
(``telegram_bot.insights``), registered in ``StatsConfig.ready``."""

from __future__ import annotations

from collections.abc import Collection
from datetime import date

from stats.models import DailyUserStat


def active_users(chat_id: int, user_ids: Collection[int], since: date, until: date) -> set[int]:
    """``insight_active_users``: which of ``user_ids`` wrote at least one message in ``chat_id``
    on a UTC day of ``since .. until`` (inclusive). One query on the daily aggregates, bounded
    by the chat, the days and the users asked about."""
    if not user_ids or since > until:
        return set()
    rows = DailyUserStat.objects.filter(
        chat_id=chat_id,
        day__gte=since,
        day__lte=until,
        user_id__in=set(user_ids),
        message_count__gt=0,
    )
    return set(rows.values_list("user_id", flat=True).distinct())
