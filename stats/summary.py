"""The text of ``/stats`` in a group: today's and this week's most active members."""

from __future__ import annotations

from datetime import date, timedelta

from django.conf import settings
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from stats.selectors import MemberTotals, chat_today, member_names, stats_report
from telegram_bot.client import TEXT_LIMIT
from telegram_bot.models import chat_zone
from telegram_bot.state import KVStore

NAME_LIMIT = 40


def group_summary_text(*, chat_id: int, store: KVStore, today: date | None = None) -> str:
    """Top members today and since Monday (the chat's days, ``chat_zone``), from the same
    sources as the dashboard."""
    zone = chat_zone(chat_id)
    today = today or chat_today(zone)
    week_start = today - timedelta(days=today.weekday())
    week = stats_report(
        chat_id=chat_id, start=week_start, end=today, store=store, today=today, zone=zone
    )
    day = stats_report(chat_id=chat_id, start=today, end=today, store=store, today=today, zone=zone)
    top = settings.STATS_COMMAND_TOP
    head = _("Most active today (%(day)s %(zone)s):") % {
        "day": today.isoformat(),
        "zone": week.zone_name,
    }
    middle = _("This week (since Monday %(day)s):") % {"day": week_start.isoformat()}
    today_lines = _ranking(chat_id, day.members(top), store)
    week_lines = _ranking(chat_id, week.members(top), store)

    def text() -> str:
        return "\n".join([head, *today_lines, "", middle, *week_lines])

    # One Telegram message: the longer ranking loses its last places until the text fits
    # (50 places a section with long names came to 15,000 characters, which Telegram refuses).
    while len(text()) > TEXT_LIMIT:
        longer = max(today_lines, week_lines, key=len)
        if longer[-1] == "...":
            if len(longer) <= 2:
                break
            del longer[-2]
        elif len(longer) > 1:
            longer[-1] = "..."
        else:
            break
    return text()


def _ranking(chat_id: int, members: list[MemberTotals], store: KVStore) -> list[str]:
    if not members:
        return [_("no messages yet")]
    return [
        f"{place}. {_short(member.name)} - "
        + ngettext("%(count)d message", "%(count)d messages", member.messages)
        % {"count": member.messages}
        + ", "
        + ngettext("%(count)d word", "%(count)d words", member.words) % {"count": member.words}
        for place, member in enumerate(member_names(chat_id, members, store), start=1)
    ]


def _short(name: str) -> str:
    """A name as the ranking shows it: at most ``NAME_LIMIT`` characters."""
    return name if len(name) <= NAME_LIMIT else name[: NAME_LIMIT - 1] + "\u2026"
