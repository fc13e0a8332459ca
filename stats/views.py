"""The statistics dashboard in the admin site, and the CSV export of its members table.

The page itself only carries the form (chat, date range); the browser draws the charts and
tables from ``/api/v1/stats/report`` (``static/stats/dashboard.js``, Chart.js vendored).
"""

from __future__ import annotations

import csv
from datetime import date, timedelta

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from stats.selectors import known_chats, member_names, stats_report, utc_today
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
    start, end = _dates(request, today)
    chat_id = _int(request.GET.get("chat_id")) or (chats[0][0] if chats else None)
    context = {
        "title": "Statistics",
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
    return render(request, "stats/dashboard.html", context)


@require_GET
def stats_export_csv(request: HttpRequest) -> HttpResponse:
    """The members table of the dashboard's chat and range, as CSV."""
    chat_id = _int(request.GET.get("chat_id"))
    if chat_id is None:
        return HttpResponseBadRequest("chat_id is required")
    start, end = _dates(request, utc_today())
    store = get_store()
    try:
        report = stats_report(chat_id=chat_id, start=start, end=end, store=store)
    except ValueError as exc:
        return HttpResponseBadRequest(str(exc))
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    filename = f"stats_{chat_id}_{start.isoformat()}_{end.isoformat()}.csv"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    writer = csv.writer(response)
    writer.writerow(CSV_COLUMNS)
    for member in member_names(chat_id, report.members(), store):
        writer.writerow([_cell(getattr(member, column)) for column in CSV_COLUMNS])
    return response


def _cell(value: object) -> object:
    # Spreadsheets run cells starting with these as formulas: names come from Telegram users.
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def _dates(request: HttpRequest, today: date) -> tuple[date, date]:
    end = _date(request.GET.get("end")) or today
    start = _date(request.GET.get("start")) or end - timedelta(days=DEFAULT_DAYS - 1)
    return start, end


def _date(value: str | None) -> date | None:
    try:
        return date.fromisoformat(value) if value else None
    except ValueError:
        return None


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value else None
    except ValueError:
        return None
