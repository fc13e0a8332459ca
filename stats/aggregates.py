"""SQL aggregates over ``stats_daily_user`` for the read path: the database sums, Python gets
a row per stored day or per member, never a row per (day, member).

Stored days are UTC days with 24 UTC hour columns. A chat's day in its own zone is the hours
of at most two stored days: ``Split(local, cut)`` says that the hours ``[0, cut)`` of a stored
day belong to the local day ``local`` and the hours ``[cut, 24)`` to ``local + 1`` (``cut``
24: the whole day is ``local``). Messages follow their hour columns exactly; a column without
an hour split (words, voice, profanity, ...) is shared between the two parts in proportion to
the member's messages in each (rounded down in the first part, the rest in the second, so
every total is kept). Zones whose offset is not a whole number of hours put each UTC hour
into the local hour it starts in.
"""

from __future__ import annotations

import calendar
import functools
from collections.abc import Callable, Container, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import Any

from django.db import connection

TABLE = "stats_daily_user"
# Per-member sums of closed months (stats.member_months).
MONTHS_TABLE = "stats_member_months"
VALUE_COLUMNS = (
    "message_count",
    "word_count",
    "voice_count",
    "voice_seconds",
    "video_note_count",
    "video_note_seconds",
    "profanity_count",
    "violations_low",
    "violations_medium",
    "violations_high",
)
HOUR_COLUMNS = tuple(f"hour_{hour:02d}" for hour in range(24))
ORDERS = {
    "messages": "message_count",
    "words": "word_count",
    "voice": "voice_seconds",
    "last_seen": "last_day",
}


@dataclass(frozen=True)
class Split:
    local: date  # the local day of the stored day's first hours
    cut: int  # hours [0, cut) are ``local``, [cut, 24) are ``local + 1``


def _offset(moment: datetime, zone: tzinfo) -> int:
    """The zone's offset from UTC at ``moment``, in minutes."""
    delta = moment.astimezone(zone).utcoffset()
    return int(delta.total_seconds() // 60) if delta is not None else 0


@functools.lru_cache(maxsize=4096)
def day_hours(day: date, zone: tzinfo) -> tuple[tuple[date, int], ...]:
    """For each UTC hour of the stored ``day``: the local day and local hour it starts in
    (cached: a year's report asks for 733 of them)."""
    midnight = datetime(day.year, day.month, day.day, tzinfo=UTC)
    first, last = _offset(midnight, zone), _offset(midnight + timedelta(hours=23), zone)
    hours = []
    for hour in range(24):
        offset = first if first == last else _offset(midnight + timedelta(hours=hour), zone)
        days, minute = divmod(hour * 60 + offset, 1440)
        hours.append((day + timedelta(days=days), minute // 60))
    return tuple(hours)


def split_of(hours: Sequence[tuple[date, int]]) -> Split:
    """The split of a stored day from its ``day_hours``."""
    local = hours[0][0]
    for hour in range(1, 24):
        if hours[hour][0] != local:
            return Split(local, hour)
    return Split(local, 24)


# --- the same shares in Python (for rows repaired from the KV counters) and in SQL -----------
def row_tail_messages(row: dict[str, int], cut: int) -> int:
    if cut >= 24:
        return 0
    return min(sum(row.get(c, 0) for c in HOUR_COLUMNS[cut:]), row.get("message_count", 0))


def row_head(row: dict[str, int], column: str, cut: int) -> int:
    value = row.get(column, 0)
    if cut >= 24:
        return value
    messages = row.get("message_count", 0)
    head_messages = messages - row_tail_messages(row, cut)
    if column == "message_count":
        return head_messages
    return value * head_messages // messages if messages > 0 else value


def _tail_messages_sql(cut: int) -> str:
    if cut >= 24:
        return "0"
    hours = " + ".join(HOUR_COLUMNS[cut:])
    return f"(CASE WHEN {hours} < message_count THEN {hours} ELSE message_count END)"


def _head_sql(column: str, cut: int) -> str:
    if cut >= 24:
        return column
    head_messages = f"(message_count - {_tail_messages_sql(cut)})"
    if column == "message_count":
        return head_messages
    return (
        f"(CASE WHEN message_count > 0 THEN {column} * {head_messages} / message_count "
        f"ELSE {column} END)"
    )


def _part_sql(column: str, cut: int, part: str) -> str:
    if part == "all":
        return column
    if part == "head":
        return _head_sql(column, cut)
    return f"({column} - {_head_sql(column, cut)})"


def as_date(value: object) -> date:
    return value if isinstance(value, date) else date.fromisoformat(str(value))


def _segments(splits: dict[date, Split]) -> list[tuple[date, date, int]]:
    """Runs of consecutive stored days with the same cut (a zone changes it at most twice a
    year)."""
    runs: list[tuple[date, date, int]] = []
    for day in sorted(splits):
        cut = splits[day].cut
        if runs and runs[-1][2] == cut and runs[-1][1] + timedelta(days=1) == day:
            runs[-1] = (runs[-1][0], day, cut)
        else:
            runs.append((day, day, cut))
    return runs


@dataclass
class StoredDay:
    """Sums of one stored day, and the share of its last hours (``cut`` onwards)."""

    messages: int = 0
    words: int = 0
    active: int = 0
    tail_messages: int = 0
    head_words: int = 0
    head_active: int = 0
    tail_active: int = 0
    hours: list[int] | None = None

    def part(self, which: str) -> tuple[int, int, int]:
        """(messages, words, active members) of the head or tail part."""
        if which == "head":
            return self.messages - self.tail_messages, self.head_words, self.head_active
        return self.tail_messages, self.words - self.head_words, self.tail_active


def stored_day(values: Sequence[int]) -> StoredDay:
    """A ``StoredDay`` from the values of ``day_sums_sql``'s expressions, in their order."""
    messages, words, active, tail_messages, head_words, head_active, tail_active = values[:7]
    return StoredDay(
        messages,
        words,
        active,
        tail_messages,
        head_words,
        head_active,
        tail_active,
        hours=list(values[7:]),
    )


def day_sums_sql(cut: int) -> list[str]:
    """The aggregate expressions of one stored day's ``StoredDay`` fields (sums, then the 24
    hours) over its rows, for the split at ``cut``."""
    active = "COUNT(*) FILTER (WHERE message_count > 0)"
    if cut >= 24:  # the whole day is one local day: no parts to sum
        parts = ["0", "SUM(word_count)", active, "0"]
    else:
        tail = _tail_messages_sql(cut)
        parts = [
            f"SUM({tail})",
            f"SUM({_head_sql('word_count', cut)})",
            f"COUNT(*) FILTER (WHERE message_count - {tail} > 0)",
            f"COUNT(*) FILTER (WHERE {tail} > 0)",
        ]
    hours = [f"SUM({column})" for column in HOUR_COLUMNS]
    return ["SUM(message_count)", "SUM(word_count)", active, *parts, *hours]


def straddlers_sql(before_cut: int, cut: int) -> str:
    """A scalar subquery: the members with messages both in the last part of the stored day
    given by the first two placeholders (chat, day; split at ``before_cut``) and in the first
    part of the next stored day (the third placeholder, split at ``cut``)."""
    if before_cut >= 24:
        return "0"
    tail = _qualify(_tail_messages_sql(before_cut), "a")
    head = _qualify(f"(message_count - {_tail_messages_sql(cut)})", "b")
    return (
        f"(SELECT COUNT(*) FROM {TABLE} a JOIN {TABLE} b ON b.chat_id = a.chat_id "  # noqa: S608 - constant columns, integer cuts, placeholders
        f"AND b.user_id = a.user_id WHERE a.chat_id = %s AND a.day = %s AND b.day = %s "
        f"AND {tail} > 0 AND {head} > 0)"
    )


def stored_days(chat_id: int, splits: dict[date, Split]) -> dict[date, StoredDay]:
    """Per stored day: totals, active members, the parts of a split day, the 24 hour sums.
    One query (a UNION ALL branch per run of days with the same cut)."""
    if not splits:
        return {}
    branches: list[str] = []
    params: list[Any] = []
    for first, last, cut in _segments(splits):
        branches.append(
            f"SELECT day, {', '.join(day_sums_sql(cut))} "  # noqa: S608 - constant columns, integer cuts, placeholders
            f"FROM {TABLE} WHERE chat_id = %s AND day >= %s AND day <= %s GROUP BY day"
        )
        params += [chat_id, first, last]
    with connection.cursor() as cursor:
        cursor.execute(" UNION ALL ".join(branches), params)
        rows = cursor.fetchall()
    days = {}
    for row in rows:
        values = [int(v or 0) for v in row[1:]]
        days[as_date(row[0])] = stored_day(values)
    return days


def straddlers(
    chat_id: int, splits: dict[date, Split], known: Container[date] = ()
) -> dict[date, int]:
    """Per stored day D: members active both in D's last part and in D+1's first part (the
    same local day), so that a local day counts them once. One query; {} without splits or
    when every pair's D is in ``known``."""
    cuts = {day: split.cut for day, split in splits.items() if split.cut < 24}
    pairs = [day for day in cuts if day + timedelta(days=1) in splits and day not in known]
    if not pairs:
        return {}
    tail = _case_by_day("a", {day: _tail_messages_sql(cuts[day]) for day in pairs})
    following = {day + timedelta(days=1): splits[day + timedelta(days=1)].cut for day in pairs}
    head = _case_by_day(
        "b", {day: f"(message_count - {_tail_messages_sql(cut)})" for day, cut in following.items()}
    )
    sql = (
        f"SELECT a.day, COUNT(*) FROM {TABLE} a JOIN {TABLE} b ON b.chat_id = a.chat_id "  # noqa: S608 - constant columns, integer cuts, placeholders
        f"AND b.user_id = a.user_id AND b.day = a.day + 1 "
        f"WHERE a.chat_id = %s AND a.day >= %s AND a.day <= %s AND {tail} > 0 "
        f"AND b.chat_id = %s AND b.day >= %s AND b.day <= %s AND {head} > 0 "
        f"GROUP BY a.day"
    )
    if connection.vendor == "sqlite":
        sql = sql.replace("b.day = a.day + 1", "b.day = date(a.day, '+1 day')")
    first, last = min(pairs), max(pairs)
    with connection.cursor() as cursor:
        cursor.execute(
            sql,
            [chat_id, first, last, chat_id, first + timedelta(days=1), last + timedelta(days=1)],
        )
        counts = {as_date(day): int(count) for day, count in cursor.fetchall()}
    return {day: count for day, count in counts.items() if day in pairs}


def _case_by_day(alias: str, expressions: dict[date, str]) -> str:
    """``expression`` of the row's day, for a handful of runs of days (inlined ISO dates).

    One arm per run of successive days with the same expression, not per expression: a range
    from winter through summer into winter has two winter runs, and one arm spanning both
    would give the summer days between them the winter cut."""
    runs: list[tuple[str, date, date]] = []  # (expression, first day, last day)
    for day in sorted(expressions):
        expression = expressions[day]
        if runs and runs[-1][0] == expression:
            runs[-1] = (expression, runs[-1][1], day)
        else:
            runs.append((expression, day, day))
    qualified = {expression: _qualify(expression, alias) for expression, _, _ in runs}
    if len(qualified) == 1:
        return qualified[runs[0][0]]
    arms = [
        f"WHEN {alias}.day BETWEEN '{low.isoformat()}' AND '{high.isoformat()}' "
        f"THEN {qualified[expression]}"
        for expression, low, high in runs
    ]
    return f"(CASE {' '.join(arms)} ELSE 0 END)"


def _qualify(expression: str, alias: str) -> str:
    for column in (*HOUR_COLUMNS, "message_count"):
        expression = expression.replace(column, f"{alias}.{column}")
    return expression


@dataclass
class MemberRow:
    user_id: int
    values: dict[str, int]
    last_day: date | None


@dataclass(frozen=True)
class RangeParts:
    """Which part of each stored day a local range takes: ``all``, ``head`` or ``tail``."""

    parts: dict[date, tuple[str, int]]  # stored day -> (part, cut)

    @property
    def first(self) -> date | None:
        return min(self.parts) if self.parts else None

    @property
    def last(self) -> date | None:
        return max(self.parts) if self.parts else None


def range_parts(splits: dict[date, Split], start: date, end: date) -> RangeParts:
    parts: dict[date, tuple[str, int]] = {}
    for day, split in splits.items():
        head_in = start <= split.local <= end
        tail_in = split.cut < 24 and start <= split.local + timedelta(days=1) <= end
        if head_in and (tail_in or split.cut >= 24):
            parts[day] = ("all", split.cut)
        elif head_in:
            parts[day] = ("head", split.cut)
        elif tail_in:
            parts[day] = ("tail", split.cut)
    return RangeParts(parts)


def utc_today() -> date:
    """Today in UTC: the stored days' calendar."""
    return datetime.now(UTC).date()


def db_today_sql() -> str:
    """The database's own today (UTC) as SQL: what writes to closed days are judged by (the
    triggers of migrations 0006 and 0008 use the same clock)."""
    if connection.vendor == "sqlite":
        return "date('now')"
    return "CAST(now() AT TIME ZONE 'UTC' AS date)"


def month_of(day: date) -> date:
    return day.replace(day=1)


def month_last(month: date) -> date:
    return month.replace(day=calendar.monthrange(month.year, month.month)[1])


def whole_months(days: Iterable[date]) -> list[date]:
    """The calendar months every day of which is in ``days``."""
    counts: dict[date, int] = {}
    for day in set(days):
        counts[month_of(day)] = counts.get(month_of(day), 0) + 1
    return sorted(month for month, count in counts.items() if count == month_last(month).day)


def _runs(days: Sequence[date]) -> list[tuple[date, date]]:
    """Runs of consecutive days of the sorted ``days``: (first, last) each."""
    runs: list[tuple[date, date]] = []
    for day in days:
        if runs and runs[-1][1] + timedelta(days=1) == day:
            runs[-1] = (runs[-1][0], day)
        else:
            runs.append((day, day))
    return runs


@dataclass(frozen=True)
class MemberSource:
    """A subquery of (user_id, day, columns) for a range (``_member_source``), and the
    months it reads from their member sums: ``check`` is a scalar expression, the sum of
    ``2 ** n`` for each month ``months[n]`` that has its sums, or no row, in the statement's
    snapshot (the others are to be read again from their rows)."""

    sql: str
    params: list[Any]
    months: tuple[date, ...]
    check: str
    check_params: list[Any]


def _member_source(
    chat_id: int,
    parts: RangeParts,
    columns: Sequence[str],
    users: Sequence[int] | None,
    unsummed: Container[date] = (),
) -> MemberSource:
    """A subquery of (user_id, day, ``columns``) with each row's share in the range: whole
    rows for the days inside it, a UNION ALL branch with the part expressions for each edge
    day of a split range (so the expressions cost nothing on the other rows).

    A calendar month whose every day is inside the range is read from its per-member sums
    (``stats.member_months``: one row per member, ``day`` its last stored day of the month),
    unless it is in ``unsummed``. So is the month the range starts in when the range goes on
    past its end and keeps more of its days than it leaves: its sums less its rows before the
    range (``day`` NULL: they count in no ``MAX(day)``; a member's last day of the month counts
    only when inside the range, and then it is their last day of the month inside it). The
    other days (the open month, a short partial month) are read from their rows. The caller
    reads ``check`` in the same statement and reads again with the months that had no sums
    in ``unsummed`` (``_months_summed``): the sums and the rows are then of one snapshot, and
    a write that dropped a month's sums committed its rows with them."""
    whole = sorted(day for day, (part, _cut) in parts.parts.items() if part == "all")
    edges = sorted((day, part) for day, part in parts.parts.items() if part[0] != "all")
    user_params = list(users or [])
    by_user = f" AND user_id IN ({', '.join(['%s'] * len(user_params))})" if users else ""
    names = ", ".join(columns)
    branches: list[str] = []
    params: list[Any] = []
    months = [month for month in whole_months(whole) if month not in unsummed]
    head = month_of(whole[0]) if whole else None
    if (
        head is None
        or head in unsummed
        or month_last(head) > whole[-1]
        or whole[0] == head
        or (whole[0] - head).days >= (month_last(head) - whole[0]).days + 1
    ):
        head = None  # no month to take less its first days
    if months:
        branches.append(
            f"SELECT user_id, last_day AS day, {names} FROM {MONTHS_TABLE} "  # noqa: S608 - constant columns, placeholders
            f"WHERE chat_id = %s AND month IN ({', '.join(['%s'] * len(months))}){by_user}"
        )
        params += [chat_id, *months, *user_params]
    if head is not None:
        branches.append(
            f"SELECT user_id, CASE WHEN last_day >= %s THEN last_day END AS day, {names} "  # noqa: S608 - constant columns, placeholders
            f"FROM {MONTHS_TABLE} WHERE chat_id = %s AND month = %s{by_user}"
        )
        params += [whole[0], chat_id, head, *user_params]
        negated = ", ".join(f"-{column} AS {column}" for column in columns)
        branches.append(
            f"SELECT user_id, NULL AS day, {negated} FROM {TABLE} "  # noqa: S608 - constant columns, placeholders
            f"WHERE chat_id = %s AND day >= %s AND day < %s{by_user}"
        )
        params += [chat_id, head, whole[0], *user_params]
    summed = (*months, *([head] if head is not None else []))
    for first, last in _runs([day for day in whole if month_of(day) not in summed]):
        branches.append(
            f"SELECT user_id, day, {names} FROM {TABLE} "  # noqa: S608 - constant columns, placeholders
            f"WHERE chat_id = %s AND day >= %s AND day <= %s{by_user}"
        )
        params += [chat_id, first, last, *user_params]
    for day, (part, cut) in edges:
        shares = ", ".join(f"{_part_sql(c, cut, part)} AS {c}" for c in columns)
        # The day counts for "last seen" only when the member wrote in this part of it (a
        # message after the range's last local day made them rank first).
        seen = f"CASE WHEN {_part_sql('message_count', cut, part)} > 0 THEN day END"
        branches.append(
            f"SELECT user_id, {seen} AS day, {shares} FROM {TABLE} "  # noqa: S608 - constant columns, integer cuts, placeholders
            f"WHERE chat_id = %s AND day = %s{by_user}"
        )
        params += [chat_id, day, *user_params]
    months_read = tuple(sorted(summed))
    flags = " + ".join(
        f"(CASE WHEN {_MONTH_READY} THEN {1 << n} ELSE 0 END)" for n in range(len(months_read))
    )
    return MemberSource(
        " UNION ALL ".join(branches),
        params,
        months_read,
        f"({flags})" if months_read else "0",
        [value for month in months_read for value in _month_ready_params(chat_id, month)],
    )


# A month read from its member sums reads right when it has them, or when it has no row (the
# months before a chat's first message: nothing either way).
_MONTH_READY = (
    f"(EXISTS (SELECT 1 FROM {MONTHS_TABLE} WHERE chat_id = %s AND month = %s) "  # noqa: S608 - constant names
    f"OR NOT EXISTS (SELECT 1 FROM {TABLE} WHERE chat_id = %s AND day >= %s AND day <= %s))"
)


def _month_ready_params(chat_id: int, month: date) -> list[Any]:
    return [chat_id, month, chat_id, month, month_last(month)]


def _months_summed(chat_id: int, months: Sequence[date]) -> set[date]:
    """Which of ``months`` read right from their sums (``_MONTH_READY``). One query."""
    ready = f"SELECT %s WHERE {_MONTH_READY}"
    with connection.cursor() as cursor:
        cursor.execute(
            " UNION ALL ".join([ready] * len(months)),
            [value for month in months for value in [month, *_month_ready_params(chat_id, month)]],
        )
        return {as_date(row[0]) for row in cursor.fetchall()}


def _summed_read(
    chat_id: int,
    parts: RangeParts,
    columns: Sequence[str],
    users: Sequence[int] | None,
    statement: Callable[[MemberSource], tuple[str, list[Any]]],
) -> list[tuple[Any, ...]]:
    """Run ``statement`` over the range's member source, its last column ``check``, and read
    again, from rows, the months whose sums were not there (when no row came back, the ones
    ``_months_summed`` does not find). One statement when every month it reads from sums has
    them or have no row (two when some months with rows have none)."""
    unsummed: set[date] = set()
    while True:
        source = _member_source(chat_id, parts, columns, users, unsummed)
        sql, params = statement(source)
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            fetched = cursor.fetchall()
        if not source.months:
            return fetched
        if fetched:
            present = int(fetched[0][-1])
            missing = {m for n, m in enumerate(source.months) if not present & (1 << n)}
        else:
            missing = set(source.months) - _months_summed(chat_id, source.months)
        if not missing:
            return fetched
        unsummed |= missing


def member_rows(
    chat_id: int,
    parts: RangeParts,
    *,
    order: str = "messages",
    limit: int | None = None,
    offset: int = 0,
    users: Iterable[int] | None = None,
) -> tuple[list[MemberRow], int]:
    """Members of the range with messages, ranked by ``order`` (then messages, then user id):
    (one page, how many members in all). One query when every whole month of the range has
    its member sums or none has (two for a page past the last member)."""
    ids = None if users is None else sorted(set(users))
    if not parts.parts or ids == []:
        return [], 0
    sums = ", ".join(f"SUM({column})" for column in VALUE_COLUMNS)
    ranking = ORDERS[order]
    ranked = "MAX(day)" if ranking == "last_day" else f"SUM({ranking})"

    def statement(source: MemberSource) -> tuple[str, list[Any]]:
        sql = (
            f"SELECT user_id, {sums}, MAX(day), COUNT(*) OVER (), {source.check} "  # noqa: S608 - constant columns, placeholders
            f"FROM ({source.sql}) r GROUP BY user_id HAVING SUM(message_count) > 0 "
            f"ORDER BY {ranked} DESC, SUM(message_count) DESC, user_id"
        )
        params = [*source.check_params, *source.params]
        if limit is not None:
            sql += " LIMIT %s OFFSET %s"
            params += [limit, offset]
        return sql, params

    fetched = _summed_read(chat_id, parts, VALUE_COLUMNS, ids, statement)
    rows = [
        MemberRow(
            int(row[0]),
            {c: int(v or 0) for c, v in zip(VALUE_COLUMNS, row[1:11], strict=True)},
            as_date(row[11]) if row[11] is not None else None,
        )
        for row in fetched
    ]
    if fetched:
        return rows, int(fetched[0][12])
    if limit is None or offset == 0:
        return rows, 0
    _, total = member_rows(chat_id, parts, limit=1, users=ids)
    return rows, total


def period_totals(chat_id: int, parts: RangeParts) -> tuple[int, int, int]:
    """(messages, words, members with messages) of a range, from the database. One query
    when every whole month of the range has its member sums or none has."""
    if not parts.parts:
        return 0, 0, 0

    def statement(source: MemberSource) -> tuple[str, list[Any]]:
        sql = (
            "SELECT SUM(m), SUM(w), COUNT(*) FILTER (WHERE m > 0), "  # noqa: S608 - constant columns, placeholders
            f"{source.check} FROM (SELECT user_id, SUM(message_count) AS m, "
            f"SUM(word_count) AS w FROM ({source.sql}) r GROUP BY user_id) s"
        )
        return sql, [*source.check_params, *source.params]

    fetched = _summed_read(chat_id, parts, ("message_count", "word_count"), None, statement)
    messages, words, members = fetched[0][:3]
    return int(messages or 0), int(words or 0), int(members or 0)


def days_between(start: date, end: date) -> Sequence[date]:
    return [start + timedelta(days=n) for n in range((end - start).days + 1)]
