"""The statistics dashboard in the admin site, and the CSV export of its members table.

The page itself only carries the form (chat, date range); the browser draws the charts and
tables from ``/api/v1/stats/report`` (``static/stats/dashboard.js``, Chart.js vendored). Days
are the chat's (``chat_zone``); the default chat is the most active one. CSV files start with
a UTF-8 byte order mark and escape cells a spreadsheet would run as formulas.

The query string is checked before anything is read (``request_range``): a range that is not
a pair of dates between 2000-01-01 and today, backwards or longer than 366 days, or a chat id
that is not one, answers 400 with the reason (the page shows it above the form, with the last
7 days filled in); a range ending after today ends today.
"""

from __future__ import annotations

import csv
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from django.conf import settings
from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import render
from django.urls import NoReverseMatch, reverse
from django.utils.http import urlencode
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext
from django.views.decorators.http import require_GET

from stats.api import growth_permitted
from stats.selectors import (
    FIRST_DAY,
    Report,
    chat_today,
    check_chat_id,
    check_range,
    known_chats,
    member_names,
    stats_report,
)
from telegram_bot.models import chat_zone
from telegram_bot.state import get_store

DEFAULT_DAYS = 7
CSV_COLUMNS = (
    "user_id",
    "name",
    "username",
    "messages",
    "words",
    "voice_count",
    "voice_minutes",
    "video_notes",
    "video_note_seconds",
    "profanity",
    "violations_low",
    "violations_medium",
    "violations_high",
    "last_seen",
)
DAILY_CSV_COLUMNS = (
    "day",
    "messages",
    "words",
    "active_members",
    "source",
    "status",
    "reason",
    "poisoned",
    "time_zone",
)


# How the charts group days: "auto" picks days up to two months, weeks up to about half a
# year, months beyond (dashboard.js does the grouping; the report is always per day).
GROUPINGS = {
    "auto": gettext_lazy("automatic"),
    "day": gettext_lazy("days"),
    "week": gettext_lazy("weeks"),
    "month": gettext_lazy("months"),
}
QUICK_RANGES = (7, 30, 90, 365)


def quick_ranges(
    chat_id: int | None, today: date, shown: tuple[date, date], grouping: str
) -> list[dict[str, object]]:
    """The last 7, 30, 90 and 365 days of the chat, ending today, as links."""
    ranges = []
    for days in QUICK_RANGES:
        start = max(FIRST_DAY, today - timedelta(days=days - 1))
        query = {"chat_id": "" if chat_id is None else chat_id, "start": start, "end": today}
        if grouping != "auto":
            query["group"] = grouping
        ranges.append(
            {
                "days": days,
                "label": ngettext("%(days)d day", "%(days)d days", days) % {"days": days},
                "url": f"?{urlencode(query)}",
                "current": shown == (start, today),
            }
        )
    return ranges


@require_GET
def stats_dashboard(request: HttpRequest) -> HttpResponse:
    store = get_store()
    chats = known_chats(store)
    errors = []
    try:
        chat_id = _chat_id(request.GET.get("chat_id"))
    except ValueError as exc:
        errors.append(str(exc))
        chat_id = None
    chat_id = chat_id or (chats[0][0] if chats else None)  # the most active chat
    zone = chat_zone(chat_id) if chat_id is not None else ZoneInfo(settings.TIME_ZONE)
    today = chat_today(zone)
    try:
        start, end = request_range(request, today)
    except ValueError as exc:
        errors.append(
            _("%(error)s: showing the last %(days)s days instead")
            % {"error": exc, "days": DEFAULT_DAYS}
        )
        start, end = today - timedelta(days=DEFAULT_DAYS - 1), today
    for error in errors:
        messages.error(request, error)
    query = urlencode({"chat_id": "" if chat_id is None else chat_id, "start": start, "end": end})
    grouping = request.GET.get("group", "auto")
    if grouping not in GROUPINGS:
        grouping = "auto"
    context = {
        **admin.site.each_context(request),
        "title": _("Statistics"),
        "chats": chats,
        "chat_id": chat_id,
        "start": start,
        "end": end,
        "today": today,
        "time_zone": str(getattr(zone, "key", zone)),
        "report_url": reverse("api-v1:stats-report"),
        # The report leaves growth out for a user without its permission: say why.
        "growth_permitted": growth_permitted(request.user),
        "cohorts_url": _cohorts_url(request),
        "csv_url": f"{reverse('admin:stats-export')}?{query}",
        "daily_csv_url": f"{reverse('admin:stats-export-daily')}?{query}",
        "quick_ranges": quick_ranges(chat_id, today, (start, end), grouping),
        "grouping": grouping,
        "groupings": [(key, GROUPINGS[key]) for key in GROUPINGS],
    }
    return render(request, "stats/dashboard.html", context, status=400 if errors else 200)


@require_GET
def stats_export_csv(request: HttpRequest) -> HttpResponse:
    """The members table of the dashboard's chat and range, as CSV."""
    checked = _export_request(request, series=False)
    if isinstance(checked, HttpResponse):
        return checked
    chat_id, report = checked
    response = _csv_response(f"stats_{chat_id}_{report.start}_{report.end}.csv")
    writer = csv.writer(response)
    writer.writerow(CSV_COLUMNS)
    for member in member_names(chat_id, report.members(), get_store()):
        writer.writerow([_cell(getattr(member, column)) for column in CSV_COLUMNS])
    return response


@require_GET
def stats_export_daily_csv(request: HttpRequest) -> HttpResponse:
    """The daily series of the dashboard's chat and range (days of the chat's zone), as CSV."""
    checked = _export_request(request)
    if isinstance(checked, HttpResponse):
        return checked
    chat_id, report = checked
    response = _csv_response(f"stats_daily_{chat_id}_{report.start}_{report.end}.csv")
    writer = csv.writer(response)
    writer.writerow(DAILY_CSV_COLUMNS)
    for day in report.days:
        writer.writerow(
            [
                day.day.isoformat(),
                day.messages,
                day.words,
                day.members,
                day.source,
                day.status,
                _cell(day.reason),
                " ".join(day.poisoned),
                report.zone_name,
            ]
        )
    return response


def _export_request(
    request: HttpRequest, *, series: bool = True
) -> tuple[int, Report] | HttpResponse:
    try:
        chat_id = _chat_id(request.GET.get("chat_id"))
        if chat_id is None:
            raise ValueError(_("chat_id is required"))
        zone = chat_zone(chat_id)
        today = chat_today(zone)
        start, end = request_range(request, today)
    except ValueError as exc:
        return HttpResponseBadRequest(str(exc), content_type="text/plain; charset=utf-8")
    report = stats_report(
        chat_id=chat_id,
        start=start,
        end=end,
        store=get_store(),
        today=today,
        zone=zone,
        series=series,
    )
    return chat_id, report


def _csv_response(filename: str) -> HttpResponse:
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    # A byte order mark: spreadsheet programs read the file as UTF-8 (Cyrillic names) only then.
    response.write("\ufeff")
    return response


def _cohorts_url(request: HttpRequest) -> str:
    """The retention cohorts' API (the members app's), when it is mounted and the user may
    read growth figures; blank otherwise (the chart is left out)."""
    if not growth_permitted(request.user):
        return ""
    try:
        return reverse("api-v1:community-cohorts")
    except NoReverseMatch:
        return ""


def request_range(request: HttpRequest, today: date) -> tuple[date, date]:
    """``start``/``end`` of the query string (defaults: the last 7 days), checked and with the
    end clamped to today (``selectors.check_range``); ValueError says what is wrong."""
    end = _day("end", request.GET.get("end")) or today
    start = _day("start", request.GET.get("start"))
    if start is None:
        if end < FIRST_DAY:  # no default start to compute: check_range says why
            return check_range(end, end, today)
        start = max(FIRST_DAY, min(end, today) - timedelta(days=DEFAULT_DAYS - 1))
    return check_range(start, end, today)


def _cell(value: object) -> object:
    # Spreadsheets run cells starting with these as formulas: names come from Telegram users.
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def _day(name: str, value: str | None) -> date | None:
    if not value:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise ValueError(_("%(name)s: not a date (YYYY-MM-DD)") % {"name": name}) from None


def _chat_id(value: str | None) -> int | None:
    if not value:
        return None
    try:
        return check_chat_id(int(value))
    except ValueError:
        raise ValueError(_("chat_id: not a chat id")) from None
