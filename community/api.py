"""JSON endpoints of the community app under /api/v1/community/ (staff with ``PERMISSION``,
see config/api.py): growth per chat and day, the retention of a week's new members, and the
retention of the last weeks' cohorts at once (the statistics dashboard's chart)."""

from __future__ import annotations

from datetime import date, timedelta

from django.utils import timezone
from ninja import Field, Query, Router, Schema
from ninja.errors import HttpError

from community.growth import growth_days, retention
from community.insights import PERMISSION  # growth figures: one permission wherever shown

__all__ = ["PERMISSION", "router"]
MAX_DAYS = 366
MAX_WEEKS = 26
FIRST_DAY = date(2000, 1, 1)
router = Router(tags=["community"])


class GrowthQuery(Schema):
    chat_id: int = Field(description="Telegram chat id (negative for groups)", lt=0)
    start: date = Field(description="first day, UTC, inclusive")
    end: date = Field(description="last day, UTC, inclusive")


class GrowthDayOut(Schema):
    day: date
    joins: int
    leaves: int
    member_count: int | None = Field(description="getChatMemberCount that day, or null")


class GrowthOut(Schema):
    chat_id: int
    days: list[GrowthDayOut]


class RetentionQuery(Schema):
    chat_id: int = Field(description="Telegram chat id (negative for groups)", lt=0)
    week_start: date = Field(description="first day of the cohort week, UTC")


class RetentionOut(Schema):
    chat_id: int
    week_start: date
    joined: int
    still_members_after_7_days: int | None = Field(description="null until it can be known")
    still_members_after_30_days: int | None = Field(description="null until it can be known")
    wrote_after_7_days: int | None = Field(
        description="joined members with a message in the chat 7 days or more after their "
        "join, up to today; null until it can be known or when activity is unavailable"
    )
    wrote_after_30_days: int | None = Field(description="the same, 30 days or more")
    activity_available: bool = Field(
        description="false when no statistics app offers who wrote when"
    )


@router.get("/growth", response=GrowthOut, url_name="community-growth")
def growth(request: object, query: Query[GrowthQuery]) -> GrowthOut:
    today = timezone.now().date()
    if query.start < FIRST_DAY or query.start > today:
        raise HttpError(422, "start must lie between 2000-01-01 and today")
    if query.end < query.start:
        raise HttpError(422, "end is before start")
    end = min(query.end, today)
    if (end - query.start).days >= MAX_DAYS:
        raise HttpError(422, f"at most {MAX_DAYS} days")
    days = growth_days(query.chat_id, query.start, end)
    return GrowthOut(
        chat_id=query.chat_id,
        days=[
            GrowthDayOut(day=d.day, joins=d.joins, leaves=d.leaves, member_count=d.member_count)
            for d in days
        ],
    )


class CohortsQuery(Schema):
    chat_id: int = Field(description="Telegram chat id (negative for groups)", lt=0)
    weeks: int = Field(12, description=f"how many weeks, up to {MAX_WEEKS}", ge=1, le=MAX_WEEKS)


@router.get("/retention", response=RetentionOut, url_name="community-retention")
def week_retention(request: object, query: Query[RetentionQuery]) -> RetentionOut:
    if query.week_start < FIRST_DAY or query.week_start > timezone.now().date():
        raise HttpError(422, "week_start must lie between 2000-01-01 and today")
    return retention_out(query.chat_id, query.week_start)


@router.get("/retention/weeks", response=list[RetentionOut], url_name="community-cohorts")
def cohorts(request: object, query: Query[CohortsQuery]) -> list[RetentionOut]:
    """The cohorts of the last ``weeks`` weeks (Monday to Sunday, UTC), oldest first, this
    week included: joined in week N, still here and wrote after 7 and 30 days (null until it
    can be known). Each week is ``/retention``'s."""
    today = timezone.now().date()
    monday = today - timedelta(days=today.weekday())
    starts = [monday - timedelta(weeks=n) for n in range(query.weeks - 1, -1, -1)]
    return [retention_out(query.chat_id, start) for start in starts if start >= FIRST_DAY]


def retention_out(chat_id: int, week_start: date) -> RetentionOut:
    result = retention(chat_id, week_start)
    return RetentionOut(
        chat_id=chat_id,
        week_start=week_start,
        joined=result.joined,
        still_members_after_7_days=result.still_members_after_7_days,
        still_members_after_30_days=result.still_members_after_30_days,
        wrote_after_7_days=result.wrote_after_7_days,
        wrote_after_30_days=result.wrote_after_30_days,
        activity_available=result.activity_available,
    )
