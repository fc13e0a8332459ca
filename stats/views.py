"""The statistics dashboard in the admin site, and the CSV export of its members table.

The page itself only carries the form (chat, date range); the browser draws the charts and
tables from ``/api/v1/stats/report`` (``static/stats/dashboard.js``, Chart.js vendored).

The query string is checked before anything is read (``request_range``): a range that is not
a pair of dates between 2000-01-01 and today, backwards or longer than 366 days, or a chat id
that is not one, answers 400 with the reason (the page shows it above the form, with the last
7 days filled in); a range ending after today ends today.
"""

from __future__ import annotations

import csv
from datetime import date, timedelta

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from stats.selectors import (
    FIRST_DAY,
    check_chat_id,
    check_range,
    known_chats,
    member_names,
    stats_report,
    utc_today,
)
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
)


@require_GET
def stats_dashboard(request: HttpRequest) -> HttpResponse:
    store = get_store()
    chats = known_chats(store)
    today = utc_today()
    errors = []
    try:
        chat_id = _chat_id(request.GET.get("chat_id"))
    except ValueError as exc:
        errors.append(str(exc))
        chat_id = None
    try:
        start, end = request_range(request, today)
    except ValueError as exc:
        errors.append(f"{exc}: showing the last {DEFAULT_DAYS} days instead")
        start, end = today - timedelta(days=DEFAULT_DAYS - 1), today
    for error in errors:
        messages.error(request, error)
    chat_id = chat_id or (chats[0][0] if chats else None)
    context = {
        "title": _("Statistics"),
        "chats": chats,
        "chat_id": chat_id,
        "start": start,
        "end": end,
        "today": today,
        "report_url": reverse("api-v1:stats-report"),
        "csv_url": reverse("admin:stats-export"),
        "has_permission": True,
        "site_header": "Community bot administration",
    }
    return render(request, "stats/dashboard.html", context, status=400 if errors else 200)


@require_GET
def stats_export_csv(request: HttpRequest) -> HttpResponse:
    """The members table of the dashboard's chat and range, as CSV."""
    today = utc_today()
    try:
        chat_id = _chat_id(request.GET.get("chat_id"))
        if chat_id is None:
            raise ValueError("chat_id is required")
        start, end = request_range(request, today)
    except ValueError as exc:
        return HttpResponseBadRequest(str(exc), content_type="text/plain; charset=utf-8")
    store = get_store()
    report = stats_report(chat_id=chat_id, start=start, end=end, store=store, today=today)
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    filename = f"stats_{chat_id}_{start.isoformat()}_{end.isoformat()}.csv"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    writer = csv.writer(response)
    writer.writerow(CSV_COLUMNS)
    for member in member_names(chat_id, report.members(), store):
        writer.writerow([_cell(getattr(member, column)) for column in CSV_COLUMNS])
    return response


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
    return value


def _day(name: str, value: str | None) -> date | None:
    if not value:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{name}: not a date (YYYY-MM-DD)") from None


def _chat_id(value: str | None) -> int | None:
    if not value:
        return None
    try:
        return check_chat_id(int(value))
    except ValueError:
        raise ValueError("chat_id: not a chat id") from None
