"""JSON endpoints of the stats app under /api/v1/stats/ (staff with ``PERMISSION``, see
config/api.py). Growth figures (joins, leaves, member counts) also need the permission their
provider names (``growth_permitted``): ``/growth`` answers 403 without it, ``/report`` leaves
them out (``growth.permitted`` false, the totals' joins and leaves null).

Every endpoint takes a chat and an inclusive range of the chat's days (its time zone,
``time_zone`` in the report) and reads through ``stats.selectors.stats_report``: the database
aggregates (closed days verified complete as they are; today and days not verified as the
live writer keeps them, repaired from the KV counters where a live write failed); each day
says which (``source``). A range that ends after today ends today; a range before 2000-01-01,
starting after today, backwards or longer than 366 days is refused with 422.

The outputs are built with ``model_construct`` from the selectors' typed values: the queries
are validated, the answers are not validated again (a year's report is about 1,500 objects).
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any, Literal

from django.http import HttpRequest
from ninja import Field, Query, Router, Schema
from ninja.errors import HttpError

from stats.completeness import Completeness, completeness
from stats.selectors import (
    CHAT_ID_MAX,
    CHAT_ID_MIN,
    DayView,
    GrowthDay,
    MemberTotals,
    Period,
    Report,
    growth_days,
    known_chats,
    member_names,
    previous_period,
    stats_report,
)
from telegram_bot import insights
from telegram_bot.state import get_store

# Who may read the statistics: the same permission as the aggregates' rows in the model admin
# (the dashboard and its CSV export ask for it too).
PERMISSION = "stats.view_dailyuserstat"
router = Router(tags=["stats"])


def growth_permitted(user: Any) -> bool:
    """Whether ``user`` may see growth figures here: they hold the permission the provider of
    growth (``insights.growth``) names (the community app's ``community.view_membermovement``, which
    its own API asks for too), so one rule holds wherever joins and leaves are shown. A
    provider that names none shows them to nobody; without a provider there is nothing to
    withhold (``available`` says there are no figures)."""
    provider = insights.growth()
    if provider is None:
        return True
    return bool(provider.permission) and bool(user.has_perm(provider.permission))


class RangeQuery(Schema):
    chat_id: int = Field(
        description="Telegram chat id (negative for groups)", ge=CHAT_ID_MIN, le=CHAT_ID_MAX
    )
    start: date = Field(
        description="first day in the chat's time zone, inclusive (2000-01-01 to today)"
    )
    end: date = Field(
        description="last day in the chat's time zone, inclusive (a later day reads as today)"
    )


class MembersQuery(RangeQuery):
    limit: int = Field(50, ge=1, le=1000, description="how many members, most messages first")
    offset: int = Field(0, ge=0, le=10_000_000, description="members to skip (pagination)")
    order: Literal["messages", "words", "voice", "last_seen"] = Field(
        "messages", description="what ranks the members (ties: messages, then user id)"
    )


class ChatOut(Schema):
    chat_id: int
    title: str


class DayOut(Schema):
    day: date
    messages: int
    words: int
    members: int = Field(description="members who wrote that day")
    source: str = Field(
        description="database | live | checking | database_unverified | none (checking: "
        "verified, but late messages came since that no verification has seen yet)"
    )
    source_label: str
    status: str = Field(description="coverage status of the day's message counts")
    reason: str = Field(description="finalize's verdict when the day is not complete")
    poisoned: list[str] = Field(description="categories whose live database write failed")
    repaired: list[str] = Field(
        description="categories whose failed live writes were read from the KV counters"
    )
    live_total: int | None = Field(
        description="the chat's KV message total of the day, for days not verified (else null)"
    )


class MemberOut(Schema):
    user_id: int
    name: str
    username: str
    messages: int
    words: int
    voice_count: int
    voice_seconds: int
    voice_minutes: float
    video_notes: int
    video_note_seconds: int
    profanity: int
    violations_low: int
    violations_medium: int
    violations_high: int
    last_seen: datetime | None = Field(description="the member's last counted message, UTC")
    last_day: date | None = Field(description="the last stored (UTC) day with messages")


class HourRowOut(Schema):
    day: date
    hours: list[int] = Field(description="messages per hour 0-23 of the chat's time zone")


class HoursOut(Schema):
    days: list[HourRowOut]
    totals: list[int] = Field(description="messages per hour of the chat's zone, whole range")
    week: list[list[int]] = Field(
        description="messages per weekday (Monday first) and hour of the chat's zone, 7 x 24"
    )


class PeriodOut(Schema):
    start: date
    end: date
    messages: int
    words: int
    active_members: int = Field(description="members with messages in the period")
    joins: int | None = Field(description="null when no growth figures are available")
    leaves: int | None


class GrowthDayOut(Schema):
    day: date
    joins: int
    leaves: int
    members: int | None = Field(description="the chat's member count that day, when fetched")


class GrowthOut(Schema):
    available: bool = Field(
        description="false when no installed app offers growth figures, or the user may not "
        "see them"
    )
    permitted: bool = Field(
        description="false when the user lacks the permission growth figures need "
        "(community.view_membermovement): no figures then"
    )
    days: list[GrowthDayOut]


class CoverageOut(Schema):
    day: date
    source: str
    status: str
    reason: str
    poisoned: list[str]
    categories: dict[str, str] = Field(description="coverage status per category")


class CompletenessOut(Schema):
    final: int = Field(description="days verified complete")
    counting: int = Field(description="days still being counted (today, not verified yet)")
    gaps: int = Field(description="days read unverified or with a failed live write")
    no_data: int = Field(description="days before the statistics' first day in the chat")
    line: str = Field(description="the same as one sentence, in the request's language")


class ReportOut(Schema):
    chat_id: int
    start: date
    end: date
    today: date = Field(description="today in the chat's time zone")
    time_zone: str = Field(description="the chat's time zone: every day and hour is in it")
    days: list[DayOut]
    members: list[MemberOut]
    members_total: int = Field(description="members with messages in the range")
    totals: PeriodOut
    previous: PeriodOut | None = Field(
        description="the period of the same length just before (null before 2000-01-01)"
    )
    growth: GrowthOut
    hours: HoursOut
    coverage: list[CoverageOut]
    completeness: CompletenessOut


@router.get(
    "/chats", response=list[ChatOut], summary="Chats with statistics", url_name="stats-chats"
)
def chats(request: object) -> list[ChatOut]:
    return [ChatOut(chat_id=chat_id, title=title) for chat_id, title in known_chats(get_store())]


@router.get(
    "/report",
    response=ReportOut,
    summary="Everything the dashboard shows, at once",
    url_name="stats-report",
)
def report(request: HttpRequest, query: Query[MembersQuery]) -> ReportOut:
    built = _report(query)
    page = built.member_page(query.limit, offset=query.offset, order=query.order)
    permitted = growth_permitted(request.user)
    growth = growth_days(built) if permitted else None
    previous = previous_period(built)
    return ReportOut.model_construct(
        chat_id=built.chat_id,
        start=built.start,
        end=built.end,
        today=built.today,
        time_zone=built.zone_name,
        days=[day_out(day) for day in built.days],
        members=[member_out(m) for m in member_names(built.chat_id, page.members, get_store())],
        members_total=page.total,
        totals=period_out(
            Period(built.start, built.end, built.messages, built.words, page.total), growth
        ),
        previous=(
            period_out(previous, growth_days(built, previous) if permitted else None)
            if previous
            else None
        ),
        growth=growth_out(growth, permitted=permitted),
        hours=hours_out(built),
        coverage=[coverage_out(day) for day in built.days],
        completeness=completeness_out(completeness(built.days)),
    )


def completeness_out(found: Completeness) -> CompletenessOut:
    return CompletenessOut.model_construct(
        final=found.final,
        counting=found.counting,
        gaps=found.gaps,
        no_data=found.no_data,
        line=found.line,
    )


@router.get("/daily", response=list[DayOut], summary="Messages and words per day")
def daily(request: object, query: Query[RangeQuery]) -> list[DayOut]:
    return [day_out(day) for day in _report(query).days]


@router.get("/members", response=list[MemberOut], summary="Members over the range, one page")
def members(request: object, query: Query[MembersQuery]) -> list[MemberOut]:
    built = _report(query, series=False)
    page = built.member_page(query.limit, offset=query.offset, order=query.order)
    return [member_out(m) for m in member_names(built.chat_id, page.members, get_store())]


@router.get("/hours", response=HoursOut, summary="Hour-of-day and hour-of-week heat maps")
def hours(request: object, query: Query[RangeQuery]) -> HoursOut:
    return hours_out(_report(query))


@router.get(
    "/growth",
    response=GrowthOut,
    summary="Joins, leaves and member counts per day",
    url_name="stats-growth",
)
def growth(request: HttpRequest, query: Query[RangeQuery]) -> GrowthOut:
    if not growth_permitted(request.user):
        raise HttpError(403, "You do not have permission to see growth figures.")
    return growth_out(growth_days(_report(query)), permitted=True)


@router.get("/coverage", response=list[CoverageOut], summary="Coverage status per day")
def coverage(request: object, query: Query[RangeQuery]) -> list[CoverageOut]:
    return [coverage_out(day) for day in _report(query).days]


def day_out(day: DayView) -> DayOut:
    return DayOut.model_construct(
        day=day.day,
        messages=day.messages,
        words=day.words,
        members=day.members,
        source=day.source,
        source_label=day.source_label,
        status=day.status,
        reason=day.reason,
        poisoned=day.poisoned,
        repaired=day.repaired,
        live_total=day.live_total,
    )


def member_out(member: MemberTotals) -> MemberOut:
    return MemberOut.model_construct(
        user_id=member.user_id,
        name=member.name,
        username=member.username,
        messages=member.messages,
        words=member.words,
        voice_count=member.voice_count,
        voice_seconds=member.voice_seconds,
        voice_minutes=member.voice_minutes,
        video_notes=member.video_notes,
        video_note_seconds=member.video_note_seconds,
        profanity=member.profanity,
        violations_low=member.violations_low,
        violations_medium=member.violations_medium,
        violations_high=member.violations_high,
        last_seen=member.last_seen,
        last_day=member.last_day,
    )


def hours_out(built: Report) -> HoursOut:
    rows = [HourRowOut.model_construct(day=day.day, hours=day.hours) for day in built.days]
    totals = [sum(row.hours[hour] for row in rows) for hour in range(24)]
    return HoursOut.model_construct(days=rows, totals=totals, week=built.week_hours)


def period_out(period: Period, growth: list[GrowthDay] | None) -> PeriodOut:
    return PeriodOut.model_construct(
        start=period.start,
        end=period.end,
        messages=period.messages,
        words=period.words,
        active_members=period.members,
        joins=None if growth is None else sum(day.joins for day in growth),
        leaves=None if growth is None else sum(day.leaves for day in growth),
    )


def growth_out(growth: list[GrowthDay] | None, *, permitted: bool) -> GrowthOut:
    days = [
        GrowthDayOut.model_construct(day=d.day, joins=d.joins, leaves=d.leaves, members=d.members)
        for d in growth or []
    ]
    return GrowthOut.model_construct(available=growth is not None, permitted=permitted, days=days)


def coverage_out(day: DayView) -> CoverageOut:
    return CoverageOut.model_construct(
        day=day.day,
        source=day.source,
        status=day.status,
        reason=day.reason,
        poisoned=day.poisoned,
        categories=day.categories,
    )


def _report(query: RangeQuery, *, series: bool = True) -> Report:
    try:
        return stats_report(
            chat_id=query.chat_id,
            start=query.start,
            end=query.end,
            store=get_store(),
            series=series,
        )
    except ValueError as exc:
        raise HttpError(422, str(exc)) from None
