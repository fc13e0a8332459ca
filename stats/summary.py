"""The text of ``/stats`` in a group: today's and this week's most active members."""

from __future__ import annotations

from datetime import date, timedelta

from django.conf import settings
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from stats.selectors import MemberTotals, Report, member_names, stats_report, utc_today
from telegram_bot.state import KVStore


def group_summary_text(*, chat_id: int, store: KVStore, today: date | None = None) -> str:
    """Top members today and since Monday (UTC weeks), from the same sources as the dashboard."""
    today = today or utc_today()
    week_start = today - timedelta(days=today.weekday())
    week = stats_report(chat_id=chat_id, start=week_start, end=today, store=store, today=today)
    top = settings.STATS_COMMAND_TOP
    today_only = Report(chat_id, today, today, today, week.days[-1:])
    lines = [_("Most active today (%(day)s UTC):") % {"day": today.isoformat()}]
    lines += _ranking(chat_id, today_only.members(top), store)
    lines += ["", _("This week (since Monday %(day)s):") % {"day": week_start.isoformat()}]
    lines += _ranking(chat_id, week.members(top), store)
    return "\n".join(lines)


def _ranking(chat_id: int, members: list[MemberTotals], store: KVStore) -> list[str]:
    if not members:
        return [_("no messages yet")]
    return [
        f"{place}. {member.name} - "
        + ngettext("%(count)d message", "%(count)d messages", member.messages)
        % {"count": member.messages}
        + ", "
        + ngettext("%(count)d word", "%(count)d words", member.words) % {"count": member.words}
        for place, member in enumerate(member_names(chat_id, members, store), start=1)
    ]
