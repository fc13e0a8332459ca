"""Per-(chat, stored day) totals for the read path (``stats_daily_totals``).

A year of a large chat is 730,000 rows of ``stats_daily_user``; summing them per day for each
dashboard read costs about 2.5x a ``COUNT(*)`` of them. A closed day changes rarely, so when
finalize or the reconciliation verify a day complete (under its exclusive lock, having just
checked every column against its KV total) they also store what the reads would sum: the
day's ``StoredDay`` for the chat's time zone and its straddlers (``day_totals_write``). The
reads take those rows for the days that have one and sum stored rows only for the others
(``day_totals_read``).

A row always equals the rows it was summed from: triggers on ``stats_daily_user`` (migration
0005) delete the totals of a day and of the next on any write to a row of a day before the
database's today (UTC): a late live add, a backfill rewrite, an erasure moving rows to an
anonymous id. The totals are written only for days before the database's today, by the same
clock, so a write to today's rows (the live path) has nothing to drop and fires nothing.
A row is used only for the zone and cut it was summed for (a chat whose zone changed reads its
rows again until the next verification).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, timedelta, tzinfo
from typing import Any

from django.db import connection
from django.utils import timezone

from stats import aggregates
from stats.aggregates import HOUR_COLUMNS, Split, StoredDay
from telegram_bot.models import chat_zone

SUM_COLUMNS = (
    "messages",
    "words",
    "active",
    "tail_messages",
    "head_words",
    "head_active",
    "tail_active",
)
COLUMNS = (*SUM_COLUMNS, "straddlers", *HOUR_COLUMNS)


def zone_name(zone: object) -> str:
    return str(getattr(zone, "key", zone))


def day_totals_write(cursor: Any, chat_id: int, day: date, zone: tzinfo | None = None) -> bool:
    """Store the read path's sums of (``chat_id``, ``day``) for the chat's zone (``zone``, else
    looked up: one more query). Call while holding the day's lock EXCLUSIVE
    (``stats.daylock``), after verifying the day. One statement; nothing is stored for a day
    that is not before the database's today (returns False)."""
    zone = zone or chat_zone(chat_id)
    before = day - timedelta(days=1)
    cut = aggregates.split_of(aggregates.day_hours(day, zone)).cut
    before_cut = aggregates.split_of(aggregates.day_hours(before, zone)).cut
    sums = aggregates.day_sums_sql(cut)
    values = [
        *sums[: len(SUM_COLUMNS)],
        aggregates.straddlers_sql(before_cut, cut),
        *sums[len(SUM_COLUMNS) :],
    ]
    straddler_params = [chat_id, before, day] if before_cut < 24 else []
    today = aggregates.db_today_sql()
    updates = ", ".join(f"{column} = excluded.{column}" for column in ("zone", "cut", *COLUMNS))
    cursor.execute(
        f"INSERT INTO stats_daily_totals (chat_id, day, zone, cut, {', '.join(COLUMNS)}, "  # noqa: S608 - constant columns, integer cuts, placeholders
        f"verified_at) SELECT %s, %s, %s, %s, "
        f"{', '.join(f'COALESCE({value}, 0)' for value in values)}, %s "
        f"FROM {aggregates.TABLE} WHERE chat_id = %s AND day = %s GROUP BY chat_id, day "
        f"HAVING %s < {today} "
        f"ON CONFLICT (chat_id, day) DO UPDATE SET {updates}, verified_at = excluded.verified_at",
        [chat_id, day, zone_name(zone), cut, *straddler_params, timezone.now(), chat_id, day, day],
    )
    return bool(cursor.rowcount == 1)


def day_totals_read(
    chat_id: int, splits: Mapping[date, Split], zone: object
) -> tuple[dict[date, StoredDay], dict[date, int]]:
    """The stored totals of the days of ``splits`` summed for their cut in ``zone``: (sums per
    day, straddlers per day D of the pair (D, D + 1), for the pairs whose D + 1 has totals).
    One query."""
    if not splits:
        return {}, {}
    name = zone_name(zone)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT day, cut, {', '.join(COLUMNS)} FROM stats_daily_totals "  # noqa: S608 - constant columns, placeholders
            "WHERE chat_id = %s AND day >= %s AND day <= %s AND zone = %s",
            [chat_id, min(splits), max(splits), name],
        )
        rows = cursor.fetchall()
    sums: dict[date, StoredDay] = {}
    straddling: dict[date, int] = {}
    for row in rows:
        day = aggregates.as_date(row[0])
        split = splits.get(day)
        if split is None or split.cut != int(row[1]):
            continue
        values = [int(value) for value in row[2:]]
        sums[day] = aggregates.stored_day(
            values[: len(SUM_COLUMNS)] + values[len(SUM_COLUMNS) + 1 :]
        )
        straddling[day - timedelta(days=1)] = values[len(SUM_COLUMNS)]
    return sums, straddling


def totals_fill(only: list[tuple[int, date]] | None = None) -> int:
    """Store the read totals of the verified days that have none (days verified before the
    totals existed; with ``only``, of those (chat, day) pairs), oldest first, each in its own
    transaction under the day's exclusive lock (a live add to the day waits for it, and its
    trigger then drops the row). Returns how many days it stored. One query for the list,
    then one transaction a day."""
    from django.db import transaction
    from django.db.models import Count, Exists, OuterRef, Q

    from stats.daylock import lock_days
    from stats.models import CATEGORIES, DailyCoverage, DailyTotals

    has_totals = DailyTotals.objects.filter(chat_id=OuterRef("chat_id"), day=OuterRef("day"))
    coverage = DailyCoverage.objects.filter(day__lt=timezone.now().date())
    if only is not None:
        if not only:
            return 0
        pairs = Q()
        for chat_id, day in only:
            pairs |= Q(chat_id=chat_id, day=day)
        coverage = coverage.filter(pairs)
    days = (
        coverage.values("chat_id", "day")
        .annotate(complete=Count("id", filter=Q(status="complete", poisoned_at__isnull=True)))
        .filter(complete=len(CATEGORIES))
        .annotate(stored=Exists(has_totals))
        .filter(stored=False)
        .order_by("day", "chat_id")
        .values_list("chat_id", "day")
    )
    stored = 0
    for chat_id, day in list(days):
        with transaction.atomic(), connection.cursor() as cursor:
            lock_days([(chat_id, day)], shared=False)
            stored += day_totals_write(cursor, chat_id, day)
    return stored
