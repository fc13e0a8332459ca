"""The statistics' cards on the admin overview: messages today against yesterday by the same
hour, and the members active in the last 7 days, across every counted chat.

Rows are kept per UTC day with 24 UTC hour columns, so a day in the ``TIME_ZONE`` setting is
summed exactly from the hours of the (up to three) UTC days it overlaps; whole-hour zones are
exact, a half-hour zone is off by the half hour at each end. "Active in 7 days" counts the
members who wrote on the last seven UTC days.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.db.models import Sum
from django.urls import reverse
from django.utils import timezone
from django.utils.http import urlencode
from django.utils.translation import gettext as _

from stats.api import PERMISSION
from stats.models import DailyUserStat
from telegram_bot.overview import (
    Card,
    ChatCount,
    ChatFigure,
    day_bounds,
    local_today,
    same_time_yesterday,
    versus_yesterday,
)

ACTIVE_DAYS = 7
_HOURS = [f"hour_{hour:02d}" for hour in range(24)]


def stats_cards(user: Any) -> list[Card]:
    """Two queries on the (day, user) index: the hour sums of at most four UTC days, and the
    distinct writers of the last seven."""
    if not user.has_perm(PERMISSION):
        return []
    today = local_today()
    yesterday = today - timedelta(days=1)
    messages = local_day_messages([yesterday, today], until={yesterday: same_time_yesterday()})
    utc_today = timezone.now().astimezone(UTC).date()
    active = (
        DailyUserStat.objects.filter(
            day__gt=utc_today - timedelta(days=ACTIVE_DAYS),
            day__lte=utc_today,
            message_count__gt=0,
        )
        .values("user_id")
        .distinct()
        .count()
    )
    dashboard = reverse("admin:stats-dashboard")
    today_count, yesterday_count = messages[today], messages[yesterday]
    return [
        Card(
            key="messages-today",
            order=10,
            title=_("Messages today"),
            value=f"{today_count:,}",
            detail=versus_yesterday(today_count, yesterday_count),
            url=reverse("admin:stats-today-by-chat"),  # the same figure, split by chat
        ),
        Card(
            key="active-members",
            order=20,
            title=_("Active members (7 days)"),
            value=f"{active:,}",
            detail=_("wrote at least once"),
            url=dashboard,
        ),
    ]


def stats_chat_figures(user: Any) -> list[ChatFigure]:
    """Messages today so far against yesterday by the same hour, per chat (one query), each
    opening the chat's statistics (``FeatureConfig.chat_figures``)."""
    if not user.has_perm(PERMISSION):
        return []
    today = local_today()
    yesterday = today - timedelta(days=1)
    by_chat = local_day_messages_by_chat(
        [yesterday, today], until={yesterday: same_time_yesterday()}
    )
    dashboard = reverse("admin:stats-dashboard")
    counts = {
        chat_id: ChatCount(
            days[today], days[yesterday], f"{dashboard}?{urlencode({'chat_id': chat_id})}"
        )
        for chat_id, days in by_chat.items()
    }
    return [ChatFigure("messages", _("Messages"), counts, order=10)]


def local_day_messages(
    days: list[date], *, until: dict[date, datetime] | None = None
) -> dict[date, int]:
    """Messages of each of ``days`` (consecutive days in the ``TIME_ZONE`` setting), summed
    over every chat (``local_day_messages_by_chat``)."""
    totals: dict[date, int] = defaultdict(int)
    for per_day in local_day_messages_by_chat(days, until=until).values():
        for day, count in per_day.items():
            totals[day] += count
    return {day: totals[day] for day in days}


def local_day_messages_by_chat(
    days: list[date], *, until: dict[date, datetime] | None = None
) -> dict[int, dict[date, int]]:
    """Messages of each of ``days`` (consecutive days in the ``TIME_ZONE`` setting) per chat,
    from the UTC hour columns, in one query. A day in ``until`` counts only its hours up to
    the one holding that moment (the same hours as today so far)."""
    spans = {day: day_bounds(day) for day in days}
    for day, moment in (until or {}).items():
        start, end = spans[day]
        last_hour = moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
        spans[day] = (start, min(end, last_hour + timedelta(hours=1)))
    first = min(start for start, _end in spans.values()).astimezone(UTC)
    last = max(end for _start, end in spans.values()).astimezone(UTC)
    rows = (
        DailyUserStat.objects.filter(day__gte=first.date(), day__lte=last.date())
        .values("chat_id", "day")
        .annotate(**{hour: Sum(hour) for hour in _HOURS})
    )
    totals: dict[int, dict[date, int]] = {}
    for row in rows:
        per_day = totals.setdefault(row["chat_id"], dict.fromkeys(days, 0))
        for index, hour in enumerate(_HOURS):
            at = datetime(row["day"].year, row["day"].month, row["day"].day, index, tzinfo=UTC)
            for day, (start, end) in spans.items():
                if start <= at < end:
                    per_day[day] += row[hour] or 0
    return {chat_id: per_day for chat_id, per_day in totals.items() if any(per_day.values())}
