"""Growth statistics of the groups: joins and leaves per chat and UTC day, the member count
once a day, and the retention of a week's new members. Stored in ORM tables
(``MemberMovement``, ``MemberCount``); read through ``community.api``.

A join or a leave is written as a row unique per (chat, stay, kind) (``member_state``: a stay
is one membership of one member, from a join to a leave). The stay record in the KV store
makes a join seen twice (``chat_member`` and the service message) or delivered again one stay,
so the insert that comes second conflicts and is ignored: each is counted exactly once. A
re-delivery after a crash between the stay's write and the row's insert inserts it then.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo

from django.conf import settings
from django.db.models import Count, F
from django.db.models.functions import TruncDate
from django.utils import timezone

from community.models import BotChat, MemberCount, MemberMovement
from telegram_bot import insights
from telegram_bot.bot import get_client
from telegram_bot.errors import TelegramApiError

log = logging.getLogger(__name__)
COUNTED_CHAT_TYPES = ("group", "supergroup", "channel")


def movement_record(*, chat_id: int, user_id: int, stay: str, kind: str, date_unix: int) -> None:
    at = datetime.fromtimestamp(date_unix, tz=UTC)
    MemberMovement.objects.bulk_create(
        [
            MemberMovement(
                chat_id=chat_id, user_id=user_id, stay=stay, kind=kind, at=at, day=at.date()
            )
        ],
        ignore_conflicts=True,
    )


def member_counts_fetch() -> int:
    """Ask Telegram for the member count of every chat the bot is in; one row per chat and
    UTC day (a second run the same day updates it). Returns how many chats were counted."""
    if not settings.TELEGRAM_BOT_TOKEN:  # a daily schedule: one line, not a traceback a day
        log.info("member counts not fetched: TELEGRAM_BOT_TOKEN is not set")
        return 0
    today = timezone.now().astimezone(UTC).date()
    client = get_client()
    counted = 0
    chats = BotChat.objects.filter(is_member=True, chat_type__in=COUNTED_CHAT_TYPES)
    for chat_id in chats.values_list("chat_id", flat=True):
        try:
            count = client.get_chat_member_count(chat_id=chat_id)
        except TelegramApiError as exc:  # one chat's failure stops no other
            log.warning("member count of %s not fetched: %s", chat_id, exc)
            continue
        MemberCount.objects.update_or_create(chat_id=chat_id, day=today, defaults={"count": count})
        counted += 1
    return counted


@dataclass(frozen=True)
class GrowthDay:
    day: date
    joins: int
    leaves: int
    member_count: int | None


def growth_days(
    chat_id: int, start: date, end: date, *, zone: tzinfo | None = None
) -> list[GrowthDay]:
    """Every day of ``start..end`` (inclusive): joins, leaves and the member count (None for a
    day without a fetched count). With ``zone``, the days are that zone's: joins and leaves
    are counted by their time there; the member count is the one fetched on that (UTC) day."""
    moves = _moves_per_day(chat_id, start, end, zone)
    counts = dict(
        MemberCount.objects.filter(chat_id=chat_id, day__gte=start, day__lte=end).values_list(
            "day", "count"
        )
    )
    days = []
    day = start
    while day <= end:
        days.append(
            GrowthDay(
                day=day,
                joins=moves.get((day, MemberMovement.Kind.JOIN), 0),
                leaves=moves.get((day, MemberMovement.Kind.LEAVE), 0),
                member_count=counts.get(day),
            )
        )
        day += timedelta(days=1)
    return days


def _moves_per_day(
    chat_id: int, start: date, end: date, zone: tzinfo | None
) -> dict[tuple[date, str], int]:
    """``{(day, kind): count}`` of joins and leaves: by the stored UTC day, or by the day of
    ``zone``."""
    if zone is None:
        rows = (
            MemberMovement.objects.filter(chat_id=chat_id, day__gte=start, day__lte=end)
            .annotate(local=F("day"))
            .values("local", "kind")
            .annotate(n=Count("id"))
        )
    else:
        since = datetime.combine(start, time.min, tzinfo=zone)
        until = datetime.combine(end + timedelta(days=1), time.min, tzinfo=zone)
        rows = (
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
    return {(row["local"], row["kind"]): row["n"] for row in rows}


@dataclass(frozen=True)
class Retention:
    joined: int
    still_members_after_7_days: int | None  # None until 7 days after the week's last day
    still_members_after_30_days: int | None
    wrote_after_7_days: int | None  # None as above, or without the statistics app
    wrote_after_30_days: int | None
    activity_available: bool  # the statistics app offers who wrote when


def retention(chat_id: int, week_start: date, *, now: datetime | None = None) -> Retention:
    """Of the joins in ``week_start .. +6 days``, how many were not followed by a leave of the
    same member within 7 and 30 days, and how many were followed by a message of that member
    in the chat on a UTC day at least 7 (30) days after the join's day, up to today. A figure
    is None while some join of the week is not that old. Leaves are matched by member and
    time, not by stay: a stay record lives 7 days in the KV store, so the leave of a long stay
    carries a stay id of its own. Messages come from the statistics app through the insights
    (``insights.active_users``); without it the "wrote" figures are None."""
    now = now or timezone.now()
    joins = list(
        MemberMovement.objects.filter(
            chat_id=chat_id,
            kind=MemberMovement.Kind.JOIN,
            day__gte=week_start,
            day__lte=week_start + timedelta(days=6),
        ).values_list("user_id", "at")
    )
    leaves: dict[int, list[datetime]] = {}
    for user_id, at in MemberMovement.objects.filter(
        chat_id=chat_id,
        kind=MemberMovement.Kind.LEAVE,
        user_id__in={user_id for user_id, _ in joins},
        day__gte=week_start,
    ).values_list("user_id", "at"):
        leaves.setdefault(user_id, []).append(at)
    last_possible = datetime.combine(week_start + timedelta(days=7), datetime.min.time(), UTC)
    active_users = insights.active_users()

    def known(days: int) -> bool:
        return now >= last_possible + timedelta(days=days)

    def still(days: int) -> int | None:
        if not known(days):
            return None
        horizon = timedelta(days=days)
        return sum(
            1
            for user_id, at in joins
            if not any(at < left <= at + horizon for left in leaves.get(user_id, []))
        )

    def wrote(days: int) -> int | None:
        if active_users is None or not known(days):
            return None
        today = now.astimezone(UTC).date()
        by_day: dict[date, set[int]] = {}
        for user_id, at in joins:
            by_day.setdefault(at.astimezone(UTC).date(), set()).add(user_id)
        writers = {  # at most 7 join days: one bounded query each
            day: active_users(chat_id, users, day + timedelta(days=days), today)
            for day, users in by_day.items()
        }
        return sum(1 for user_id, at in joins if user_id in writers[at.astimezone(UTC).date()])

    return Retention(
        joined=len(joins),
        still_members_after_7_days=still(7),
        still_members_after_30_days=still(30),
        wrote_after_7_days=wrote(7),
        wrote_after_30_days=wrote(30),
        activity_available=active_users is not None,
    )
