"""Per-member sums of closed months for the member ranking (``stats_member_months``).

The ranking (``aggregates.member_rows``) and a period's totals (``aggregates.period_totals``)
group a range's rows by member: a year of a chat with 2,000 members a day is one scan of
730,000 rows. A stored (UTC) day inside a range is taken whole whatever the chat's zone (only
the edge days of a split range take a part, ``aggregates.range_parts``), so a calendar month
whose every day is inside the range can be read as one row per member of the month: its sums
and its last stored day. The reads take those rows for the whole months that have them and
the daily rows for the rest (partial months, the open month, the edge parts), in one
statement that also says which of those months had their sums in its snapshot; a month that
had none is read again from its rows (``aggregates._summed_read``).

A chat-month's rows always equal the rows they were summed from:

- they are written (``month_write``) only for a closed month, one whose every day is before
  the database's today (UTC, the database's own clock), in one statement, in a transaction
  that first takes the exclusive lock of every day of the month (``stats.daylock``, one
  statement in key order, as the backfill takes many days). Every writer of
  ``stats_daily_user`` holds its day's lock until it commits (the live writer SHARED from
  before its KV commit, the backfill, the reconciliation and an erasure EXCLUSIVE), so the
  sums see every write committed before them, and a write that comes later commits after
  them;
- triggers on ``stats_daily_user`` (migration 0008) delete every row of (chat, month) on any
  insert, update or delete of a row of a day of a closed month, in the writer's transaction:
  a late live add, a backfill rewrite, an erasure moving a member's rows to an anonymous id
  (so the whole chat-month goes, not one member's row). The open month has no sums, so
  today's live writes fire nothing.

They are written after finalize (when the backfill run ends) or the reconciliation verify a
day of a closed month (the
backfill's rewrites of the last days of a month, in the first days of the next, drop them
first), and by ``month_fill`` (``manage.py stats_totals``) for the closed months that have
none (months closed before the sums existed, or dropped by an erasure). Without them the
reads are the same, only slower.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date

from django.db import connection, transaction

from stats import aggregates
from stats.aggregates import month_last, month_of, utc_today
from stats.daylock import lock_days

TABLE = aggregates.MONTHS_TABLE


def month_days(month: date) -> list[date]:
    return list(aggregates.days_between(month, month_last(month)))


def month_write(chat_id: int, month: date) -> int:
    """Sum the chat's rows of ``month`` per member and store them, replacing what was stored,
    in its own transaction under the exclusive lock of every day of the month (module
    docstring). Nothing is stored for a month whose last day is not before the database's
    today. Returns the members stored. Two statements and the lock."""
    month = month_of(month)
    first, last = month, month_last(month)
    columns = ", ".join(aggregates.VALUE_COLUMNS)
    sums = ", ".join(f"SUM({column})" for column in aggregates.VALUE_COLUMNS)
    with transaction.atomic(), connection.cursor() as cursor:
        lock_days([(chat_id, day) for day in month_days(month)], shared=False)
        cursor.execute(
            f"DELETE FROM {TABLE} WHERE chat_id = %s AND month = %s",  # noqa: S608 - a constant name
            [chat_id, month],
        )
        cursor.execute(
            f"INSERT INTO {TABLE} (chat_id, month, user_id, {columns}, last_day, days) "  # noqa: S608 - constant columns, placeholders
            f"SELECT chat_id, %s, user_id, {sums}, MAX(day), COUNT(*) FROM {aggregates.TABLE} "
            f"WHERE chat_id = %s AND day >= %s AND day <= %s AND %s < {aggregates.db_today_sql()} "
            "GROUP BY chat_id, user_id",
            [month, chat_id, first, last, last],
        )
        return max(int(cursor.rowcount), 0)


def month_stored(chat_id: int, month: date) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT 1 FROM {TABLE} WHERE chat_id = %s AND month = %s LIMIT 1",  # noqa: S608 - a constant name
            [chat_id, month_of(month)],
        )
        return cursor.fetchone() is not None


def months_after_verified(pairs: Iterable[tuple[int, date]], today: date | None = None) -> int:
    """After days were verified (and their transaction committed): store the sums of the
    closed months of ``pairs`` that have none. Call outside any day lock. Returns the months
    stored."""
    today = today or utc_today()
    months = sorted(
        {(chat_id, month_of(day)) for chat_id, day in pairs if month_last(month_of(day)) < today}
    )
    stored = 0
    for chat_id, month in months:
        if not month_stored(chat_id, month):
            stored += month_write(chat_id, month) > 0
    return stored


def month_fill(today: date | None = None) -> int:
    """Store the sums of every closed chat-month with stored rows that has none, oldest first,
    each in its own transaction (``month_write``). One query for the chat-months with data
    (their days' coverage rows, a few a day), one for those stored, then a transaction per
    month to store. Returns the months stored."""
    from stats.models import DailyCoverage, MemberMonth

    today = today or utc_today()
    first_open = month_of(today)
    pairs = set(
        DailyCoverage.objects.filter(day__lt=first_open).values_list("chat_id", "day").distinct()
    )
    months = {(chat_id, month_of(day)) for chat_id, day in pairs}
    stored = set(MemberMonth.objects.values_list("chat_id", "month").distinct())
    written = 0
    for chat_id, month in sorted(months - stored, key=lambda pair: (pair[1], pair[0])):
        written += month_write(chat_id, month) > 0
    return written
