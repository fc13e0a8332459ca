"""The member page: one person in one chat, in the web console.

The statistics are this app's (messages over time, words, voice); the audit log's entries
about the member in this chat are the core's; the other apps add their parts (warnings and the
moderation actions, tickets, joins and leaves) as ``member_sections`` of their FeatureConfig,
each only for a user who may view it. Days are the chat's (``chat_zone``); times are shown in
the console's zone (``|zoned``). Opening the page needs the statistics view permission.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

from django.contrib import admin
from django.db.models import Min, QuerySet, Sum
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_GET

from stats.models import DailyUserStat
from stats.selectors import FIRST_DAY, MemberTotals, chat_today, member_names
from telegram_bot import features
from telegram_bot.audit.admin import phrases, sentence
from telegram_bot.models import AuditEntry, chat_zone
from telegram_bot.numbers import ascii_int
from telegram_bot.state import get_store

RANGES = (30, 90, 365)
DEFAULT_DAYS = 90
AUDIT_PERMISSION = "telegram_bot.view_auditentry"
AUDIT_SHOWN = 50
WEEKLY_FROM = 120  # days: a longer range is drawn a week a bar
FIELDS = ("message_count", "word_count", "voice_count", "voice_seconds", "video_note_count")


@dataclass(frozen=True)
class Period:
    start: date
    messages: int
    words: int


@require_GET
def member_page(request: HttpRequest, chat_id: str, user_id: str) -> HttpResponse:
    chat, user = ascii_int(chat_id, signed=True), ascii_int(user_id)
    if chat is None or user is None:
        raise Http404("not a chat id and a user id")
    days = ascii_int(request.GET.get("days", "")) or DEFAULT_DAYS
    days = days if days in RANGES else DEFAULT_DAYS
    zone = chat_zone(chat)
    today = chat_today(zone)
    # Days before the chat's first counted day are no data, not zeros: the range starts there.
    first = DailyUserStat.objects.filter(chat_id=chat).aggregate(first=Min("day"))["first"]
    start = max(FIRST_DAY, today - timedelta(days=days - 1), min(first or today, today))
    member = _member(chat, user)
    rows = DailyUserStat.objects.filter(chat_id=chat, user_id=user)
    totals = rows.filter(day__gte=start, day__lte=today).aggregate(
        **{field: Sum(field) for field in FIELDS}
    )
    periods = _periods(rows, start, today, weekly=days >= WEEKLY_FROM)
    can_audit = request.user.has_perm(AUDIT_PERMISSION)
    context = {
        **admin.site.each_context(request),
        # The window's title (the heading shows the name alone).
        "title": _("Member: %(name)s") % {"name": member.label},
        "member": member,
        "days": days,
        "ranges": [(n, ngettext("%(days)d day", "%(days)d days", n) % {"days": n}) for n in RANGES],
        "start": start,
        "clipped": first is not None and start > today - timedelta(days=days - 1),
        "today": today,
        "time_zone": str(getattr(zone, "key", zone)),
        "weekly": days >= WEEKLY_FROM,
        "totals": {key: value or 0 for key, value in totals.items()},
        "voice_minutes": round((totals["voice_seconds"] or 0) / 60, 1),
        "periods": periods,
        "chart": {
            "labels": [period.start.isoformat() for period in periods],
            "messages": [period.messages for period in periods],
            "label": _("Messages"),
        },
        "can_audit": can_audit,
        "audit": _audit(chat, user) if can_audit else [],
        "sections": features.member_sections(request, member),
    }
    return render(request, "stats/member.html", context)


def _member(chat_id: int, user_id: int) -> features.Member:
    """Names first: the member's display name and @username (the statistics' profile, else
    the last message seen), the chat's title (any app that knows it)."""
    (named,) = member_names(chat_id, [MemberTotals(user_id)], get_store())
    title = features.chat_titles([chat_id]).get(chat_id, "")
    return features.Member(chat_id, user_id, named.name, named.username, title)


def _periods(
    rows: QuerySet[DailyUserStat], start: date, end: date, *, weekly: bool
) -> list[Period]:
    """Messages and words per day (or per week from Monday), zeros included."""
    found = {
        row["day"]: row
        for row in rows.filter(day__gte=start, day__lte=end).values(
            "day", "message_count", "word_count"
        )
    }
    periods: dict[date, list[int]] = {}
    day = start
    while day <= end:
        key = day - timedelta(days=day.weekday()) if weekly else day
        sums = periods.setdefault(key, [0, 0])
        row = found.get(day)
        if row is not None:
            sums[0] += row["message_count"]
            sums[1] += row["word_count"]
        day += timedelta(days=1)
    return [Period(key, messages, words) for key, (messages, words) in periods.items()]


def _audit(chat_id: int, user_id: int) -> list[dict[str, object]]:
    known = phrases()
    entries = AuditEntry.objects.filter(chat_id=chat_id, target_id=user_id).order_by(
        "-created_at", "-id"
    )[:AUDIT_SHOWN]
    return [
        {
            "at": entry.created_at,
            "what": sentence(entry, known),
            "reason": entry.reason,
            "pk": entry.pk,
        }
        for entry in entries
    ]
