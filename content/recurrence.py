"""When a recurring post's occurrences fall: every day, every weekday (Monday to Friday) or
every week, at the local time of its first publication in its zone, until an end date
(inclusive, a date in that zone). Daylight saving time keeps the local time: 09:00 stays 09:00
in the zone, so the UTC time moves by an hour twice a year."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _

DAILY, WEEKDAYS, WEEKLY = "daily", "weekdays", "weekly"
EVERY = (DAILY, WEEKDAYS, WEEKLY)


def zone(name: str) -> ZoneInfo:
    """The zone of that name; ValidationError for an unknown one."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValidationError(
            {"repeat": _("Unknown time zone %(zone)r.") % {"zone": name}}
        ) from None


def occurrence_from(
    *, every: str, first: datetime, zone_name: str, until: date, start: datetime
) -> datetime | None:
    """The first occurrence at or after ``start`` (aware), or None when none is left before
    the end of ``until``. ``first`` is the first publication: its local time of day (and, for
    ``weekly``, its weekday) sets every occurrence."""
    tz = zone(zone_name)
    local_first = first.astimezone(tz)
    at = local_first.time().replace(tzinfo=None)
    day = max(local_first.date(), start.astimezone(tz).date())
    while day <= until:
        if _falls_on(every, day, local_first.date()):
            moment = datetime.combine(day, at, tzinfo=tz)
            if moment >= start:
                return moment
        day += timedelta(days=1)
    return None


def local_date(moment: datetime, zone_name: str) -> date:
    """The date of ``moment`` in the zone (an occurrence's key)."""
    return moment.astimezone(zone(zone_name)).date()


def _falls_on(every: str, day: date, first: date) -> bool:
    if every == WEEKDAYS:
        return day.weekday() < 5
    if every == WEEKLY:
        return day.weekday() == first.weekday()
    return True
