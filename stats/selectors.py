"""Reads of the stats app: the report behind the dashboard, the API and /stats.

The database aggregates (``stats.aggregates``): one query sums each stored day of the range,
one ranks the members of a page; Python never sees a row per (day, member), so a year of a
chat with 2,000 members a day costs a few queries, not 730,000 rows.

Days are the chat's days (``chat_zone``: its ``ChatPreference``, else ``TIME_ZONE``); stored
days are UTC days with UTC hour columns, and a local day is the right hours of at most two of
them (``stats.aggregates``: exact for messages and hours, shared by messages for the other
columns). The KV store is asked with gets only, never a scan (a SCAN MATCH on Redis walks the
whole keyspace, whatever the prefix), and only about the stored days whose counters may still
exist (``kv_oldest_day``); no stored day after today (UTC) is read:

- per such day, the failed-writes index ``stats:failed:{chat}:{day}`` (``stats.poison``), and
  per such day verified, its recheck mark (``stats.recheck``; all of them in one
  ``get_many``); when the index
  names users, the poison marks of its categories and the counters of exactly the columns the
  failed live writes missed, which replace the database's values of those rows (the KV
  counters hold every fact: they are committed before the database write);
- per day not verified that has data (and today), the chat's daily total ``activity:...``,
  served as ``live_total`` next to the total read (for a chat in UTC: a local day of another
  zone is two stored days, and the total of a stored day does not split);
- the names and last messages of the members of a page (``member_names``, one ``get_many``).

Where each stored day's numbers come from (``DayView.source``; a local day takes the least
trusted of its stored days, and one with hours of today, UTC, is at best ``live``):
- ``database``: a closed day (before today, UTC) whose every category (so every column shown)
  finalize or the reconciliation verified complete against its KV total, none poisoned, and
  no late message since (``stats.recheck``).
- ``checking``: such a day that got a late message no verification has seen yet (its
  database add may have been lost with its writer): the database's numbers, shown as being
  checked until the reconciliation (a minute or two) or finalize verifies the day again.
- ``live``: a day not verified (today, or a closed day the backfill has not verified): the
  live writer's rows, with the KV counters for whatever a failed live write missed
  (``DayView.repaired`` names those categories).
- ``database_unverified``: a day not verified that is known to be incomplete: a poisoned
  category the KV counters can no longer repair (expired, or no index of the failed writes),
  or finalize's parity gate failed (``reason``).
- ``none``: nothing counted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import NamedTuple

from django.conf import settings
from django.db.models import Sum
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from stats import aggregates, keys, totals
from stats.aggregates import RangeParts, Split, StoredDay, utc_today
from stats.config import counter_ttl_ms
from stats.models import CATEGORIES, ChatUserProfile, DailyCoverage, DailyUserStat, StatsChat
from stats.poison import failed_decode, poison_read
from stats.recheck import recheck_pending
from telegram_bot import insights
from telegram_bot.models import chat_zone
from telegram_bot.state import KVStore

FIRST_DAY = date(2000, 1, 1)
MAX_RANGE_DAYS = 366
# Chat ids are stored in BIGINT columns.
CHAT_ID_MIN, CHAT_ID_MAX = -(2**63), 2**63 - 1
SOURCE_LABELS = {
    "database": gettext_lazy("database (verified complete)"),
    "checking": gettext_lazy("database (being checked: late messages since its verification)"),
    "live": gettext_lazy("live counts (not verified yet)"),
    "database_unverified": gettext_lazy("database (not verified, incomplete)"),
    "none": gettext_lazy("no data"),
}
# The least trusted first: a local day made of two stored days takes the first that applies.
SOURCE_ORDER = ("database_unverified", "live", "checking", "database", "none")
STATUS_ORDER = ("none", "pending", "live", "complete")
COLUMNS = tuple(keys.COLUMN_CATEGORY)


@dataclass
class MemberTotals:
    user_id: int
    messages: int = 0
    words: int = 0
    voice_count: int = 0
    voice_seconds: int = 0
    video_notes: int = 0
    video_note_seconds: int = 0
    profanity: int = 0
    violations_low: int = 0
    violations_medium: int = 0
    violations_high: int = 0
    name: str = ""
    username: str = ""
    last_day: date | None = None  # the last stored (UTC) day with messages in the range
    last_seen: datetime | None = None  # the member's last counted message (KV), when known

    @classmethod
    def of(cls, user_id: int, values: Mapping[str, int], last_day: date | None) -> MemberTotals:
        return cls(
            user_id,
            messages=values.get("message_count", 0),
            words=values.get("word_count", 0),
            voice_count=values.get("voice_count", 0),
            voice_seconds=values.get("voice_seconds", 0),
            video_notes=values.get("video_note_count", 0),
            video_note_seconds=values.get("video_note_seconds", 0),
            profanity=values.get("profanity_count", 0),
            violations_low=values.get("violations_low", 0),
            violations_medium=values.get("violations_medium", 0),
            violations_high=values.get("violations_high", 0),
            last_day=last_day,
        )

    @property
    def voice_minutes(self) -> float:
        return round(self.voice_seconds / 60, 1)


@dataclass
class DayView:
    day: date
    source: str
    status: str  # coverage status of the day's message counts
    reason: str
    poisoned: list[str]
    categories: dict[str, str]
    messages: int = 0
    words: int = 0
    members: int = 0  # members who wrote that day
    hours: list[int] = field(default_factory=lambda: [0] * 24)  # local hours
    repaired: list[str] = field(default_factory=list)  # categories read from the KV counters
    live_total: int | None = None  # the KV daily total, read for days not verified
    open: bool = False  # a stored day not closed yet (today, UTC): never verified

    @property
    def source_label(self) -> str:
        label = str(SOURCE_LABELS[self.source])
        if self.repaired:
            label += f", KV counters for failed writes ({', '.join(self.repaired)})"
        return label


@dataclass
class MemberPage:
    members: list[MemberTotals]
    total: int  # members with messages in the range


@dataclass
class Report:
    chat_id: int
    start: date
    end: date
    today: date  # the chat's today
    zone: tzinfo
    days: list[DayView]
    week_hours: list[list[int]]  # [weekday Monday=0][local hour]
    parts: RangeParts
    # Rows a failed live write left short, (stored day, user) -> (database row, repaired row).
    repairs: dict[tuple[date, int], tuple[dict[str, int], dict[str, int]]]

    @property
    def zone_name(self) -> str:
        return str(getattr(self.zone, "key", self.zone))

    @property
    def messages(self) -> int:
        return sum(day.messages for day in self.days)

    @property
    def words(self) -> int:
        return sum(day.words for day in self.days)

    def members(
        self, limit: int | None = None, *, offset: int = 0, order: str = "messages"
    ) -> list[MemberTotals]:
        """Members over the whole range, most messages first (or by ``order``)."""
        return self.member_page(limit, offset=offset, order=order).members

    def member_page(
        self, limit: int | None = None, *, offset: int = 0, order: str = "messages"
    ) -> MemberPage:
        """One page of the members with messages, ranked in the database; rows repaired from
        the KV counters are added to their members' totals before ranking."""
        deltas, repaired_days = self._member_deltas()
        fetch = None if limit is None else offset + limit + len(deltas)
        rows, total = aggregates.member_rows(self.chat_id, self.parts, order=order, limit=fetch)
        if deltas:
            missing = deltas.keys() - {row.user_id for row in rows}
            extra, _ = aggregates.member_rows(self.chat_id, self.parts, users=missing)
            rows += extra
            known = {row.user_id for row in extra}
            for user_id in missing - known:
                rows.append(aggregates.MemberRow(user_id, {}, None))
                if deltas[user_id].get("message_count", 0) > 0:
                    total += 1
            for row in rows:
                for column, delta in deltas.get(row.user_id, {}).items():
                    row.values[column] = row.values.get(column, 0) + delta
                # "Last seen" counts the repaired days too (a member known only from the
                # counters had none, and ranked last although they wrote today).
                repaired = repaired_days.get(row.user_id)
                if repaired is not None and (row.last_day is None or repaired > row.last_day):
                    row.last_day = repaired
            rows = [row for row in rows if row.values.get("message_count", 0) > 0]
            rows.sort(key=_ranking(order))
        members = [MemberTotals.of(row.user_id, row.values, row.last_day) for row in rows]
        if limit is not None:
            members = members[offset : offset + limit]
        return MemberPage(members, total)

    def _member_deltas(self) -> tuple[dict[int, dict[str, int]], dict[int, date]]:
        """What the KV repairs add to each member's totals, and each member's last repaired
        stored day with messages in the range."""
        deltas: dict[int, dict[str, int]] = {}
        last_days: dict[int, date] = {}
        for (day, user_id), (stored, repaired) in self.repairs.items():
            part = self.parts.parts.get(day)
            if part is None:
                continue
            which, cut = part
            user = deltas.setdefault(user_id, {})
            for column in aggregates.VALUE_COLUMNS:
                delta = _share(repaired, column, which, cut) - _share(stored, column, which, cut)
                if delta:
                    user[column] = user.get(column, 0) + delta
            if _share(repaired, "message_count", which, cut) > 0:
                last_days[user_id] = max(day, last_days.get(user_id, day))
        return {user_id: delta for user_id, delta in deltas.items() if delta}, last_days


@dataclass(frozen=True)
class Period:
    start: date
    end: date
    messages: int
    words: int
    members: int  # members with messages


@dataclass(frozen=True)
class GrowthDay:
    day: date
    joins: int
    leaves: int
    members: int | None


def previous_period(report: Report) -> Period | None:
    """The period of the same length just before the report's, from the database (one query;
    KV repairs, which concern the last days only, are not applied), or None before
    ``FIRST_DAY``."""
    length = report.end - report.start + timedelta(days=1)
    start, end = report.start - length, report.start - timedelta(days=1)
    if start < FIRST_DAY:
        return None
    splits = {
        day: aggregates.split_of(aggregates.day_hours(day, report.zone))
        for day in aggregates.days_between(start - timedelta(days=1), end + timedelta(days=1))
    }
    parts = aggregates.range_parts(splits, start, end)
    messages, words, members = aggregates.period_totals(report.chat_id, parts)
    return Period(start, end, messages, words, members)


def growth_days(report: Report, period: Period | None = None) -> list[GrowthDay] | None:
    """Joins, leaves and member counts per day of the report (or ``period``) in the chat's
    zone, from the app that offers growth (``insights.growth``); None when none does."""
    provider = insights.growth()
    if provider is None:
        return None
    start, end = (period.start, period.end) if period else (report.start, report.end)
    return [
        GrowthDay(
            day=row["date"],
            joins=int(row["joins"]),
            leaves=int(row["leaves"]),
            members=None if row.get("members") is None else int(row["members"]),
        )
        for row in provider(report.chat_id, start, end, zone=report.zone)
    ]


def _share(row: dict[str, int], column: str, which: str, cut: int) -> int:
    if which == "all":
        return row.get(column, 0)
    head = aggregates.row_head(row, column, cut)
    return head if which == "head" else row.get(column, 0) - head


def _ranking(order: str) -> object:
    column = aggregates.ORDERS[order]

    def key(row: aggregates.MemberRow) -> tuple[object, ...]:
        if column == "last_day":
            first: object = -(row.last_day.toordinal() if row.last_day else 0)
        else:
            first = -row.values.get(column, 0)
        return (first, -row.values.get("message_count", 0), row.user_id)

    return key


def check_range(start: date, end: date, today: date | None = None) -> tuple[date, date]:
    """The range to read: ``end`` clamped to today (days after it are never read).

    ValueError, with a message for the person who asked, for a range that starts before
    ``FIRST_DAY`` or after today, ends before it starts, or covers more than
    ``MAX_RANGE_DAYS`` days.
    """
    today = today or utc_today()
    if min(start, end) < FIRST_DAY or start > today:
        raise ValueError(
            _("days must be between %(first)s and today (%(today)s)")
            % {"first": FIRST_DAY.isoformat(), "today": today.isoformat()}
        )
    end = min(end, today)
    if end < start:
        raise ValueError(_("the range ends before it starts"))
    if (end - start).days >= MAX_RANGE_DAYS:
        raise ValueError(_("a range covers at most %(days)s days") % {"days": MAX_RANGE_DAYS})
    return start, end


def check_chat_id(chat_id: int) -> int:
    """A chat id: in the BIGINT range, and not 0 (no Telegram chat has it)."""
    if chat_id == 0 or not CHAT_ID_MIN <= chat_id <= CHAT_ID_MAX:
        raise ValueError(_("not a chat id"))
    return chat_id


def kv_oldest_day(today: date) -> date:
    """The oldest day whose KV counters may still exist (a day's counters are created on that
    day or later, and live ``STATS_COUNTER_TTL_DAYS``); older days cost no KV read."""
    lifetime_days = -(-counter_ttl_ms() // 86_400_000) + 1
    return max(FIRST_DAY, today - timedelta(days=min(lifetime_days, (today - FIRST_DAY).days)))


def chat_today(zone: tzinfo) -> date:
    return datetime.now(zone).date()


def stats_report(
    *,
    chat_id: int,
    start: date,
    end: date,
    store: KVStore,
    today: date | None = None,
    zone: tzinfo | None = None,
    series: bool = True,
) -> Report:
    """Every day of ``start``..``end`` (at most today) for one chat, in the chat's zone
    (module docstring). ``today`` is the chat's today (default: now in its zone). Without
    ``series`` the days are not summed (``days`` is empty): enough for a members page."""
    check_chat_id(chat_id)
    zone = zone or chat_zone(chat_id)
    today = today or chat_today(zone)
    start, end = check_range(start, end, today)
    stored_today = min(utc_today(), today + timedelta(days=1))
    hours_of = {
        day: aggregates.day_hours(day, zone)
        for day in aggregates.days_between(start - timedelta(days=1), end + timedelta(days=1))
        if day <= stored_today
    }
    splits = {day: aggregates.split_of(hours) for day, hours in hours_of.items()}
    parts = aggregates.range_parts(splits, start, end)
    splits = {day: split for day, split in splits.items() if day in parts.parts}
    oldest_kv = kv_oldest_day(stored_today)
    if not series:  # no days to show: only the days whose KV counters may repair members
        splits = {day: split for day, split in splits.items() if day >= oldest_kv}
    coverage = _coverage(chat_id, min(splits, default=None), max(splits, default=None))
    sums: dict[date, StoredDay] = {}
    straddling: dict[date, int] = {}
    if series:  # the verified days' stored totals; the other days summed from their rows
        sums, straddling = totals.day_totals_read(chat_id, splits, zone)
        unsummed = {day: split for day, split in splits.items() if day not in sums}
        sums.update(aggregates.stored_days(chat_id, unsummed))
        straddling.update(aggregates.straddlers(chat_id, splits, known=straddling))
    # The failed-writes index of every day the counters may still hold, and the recheck mark
    # of those verified (closed, every category complete), in one round trip.
    kv_days = [day for day in sorted(splits) if day >= oldest_kv]
    verified = [
        day for day in kv_days if day < stored_today and _all_complete(coverage.get(day, {}))
    ]
    read = store.get_many(
        [keys.failed_key(chat_id, day) for day in kv_days]
        + [keys.recheck_key(chat_id, day) for day in verified]
    )
    failed = dict(zip(kv_days, read[: len(kv_days)], strict=True))
    rechecks = {
        day
        for day, mark in zip(verified, read[len(kv_days) :], strict=True)
        if recheck_pending(mark)
    }
    repairs: dict[tuple[date, int], tuple[dict[str, int], dict[str, int]]] = {}
    stored = {
        day: _stored_view(
            chat_id,
            day,
            today=stored_today,
            rows=coverage.get(day, {}),
            sums=sums.setdefault(day, StoredDay(hours=[0] * 24)),
            split=splits[day],
            store=store if day >= oldest_kv else None,
            failed=failed_decode(failed.get(day)),
            repairs=repairs,
            recheck=day in rechecks,
        )
        for day in sorted(splits)
    }
    # The KV daily totals of the days not verified, in one round trip (a stored day's total
    # does not split: only for chats whose days are UTC days).
    unverified = [
        day
        for day, view in stored.items()
        if series
        and view.source != "database"
        and day >= oldest_kv
        and splits[day].cut >= 24
        and (sums[day].active or coverage.get(day) or day == stored_today)
    ]
    live_totals = store.get_many([keys.activity_key(chat_id, d) for d in unverified])
    for day, total in zip(unverified, live_totals, strict=True):
        stored[day].live_total = total if isinstance(total, int) else None
    days: list[DayView] = []
    week = [[0] * 24 for _ in range(7)]
    if series:
        days, week = _local_days(start, end, splits, stored, sums, straddling, hours_of)
    return Report(chat_id, start, end, today, zone, days, week, parts, repairs)


def _local_days(
    start: date,
    end: date,
    splits: dict[date, Split],
    stored: dict[date, DayView],
    sums: dict[date, StoredDay],
    straddling: dict[date, int],
    hours_of: dict[date, tuple[tuple[date, int], ...]],
) -> tuple[list[DayView], list[list[int]]]:
    """The chat's days from the stored days' parts, and the hour-of-week heat map."""
    heads = {split.local: day for day, split in splits.items()}
    tails = {
        split.local + timedelta(days=1): day for day, split in splits.items() if split.cut < 24
    }
    week = [[0] * 24 for _ in range(7)]
    views = []
    for local in aggregates.days_between(start, end):
        pieces = [(day, "head") for day in [heads.get(local)] if day is not None]
        pieces += [(day, "tail") for day in [tails.get(local)] if day is not None]
        view = _merged([stored[day] for day, _part in pieces], local)
        for day, part in pieces:
            messages, words, members = sums[day].part(part)
            view.messages += messages
            view.words += words
            view.members += members
            if part == "tail" and heads.get(local) is not None:
                view.members -= straddling.get(day, 0)
            for hour, (hour_day, local_hour) in enumerate(hours_of[day]):
                if hour_day == local:
                    count = (sums[day].hours or [0] * 24)[hour]
                    view.hours[local_hour] += count
                    week[local.weekday()][local_hour] += count
        views.append(view)
    return views, week


def _merged(parts: list[DayView], local: date) -> DayView:
    """A local day's quality: the least trusted of its stored days."""
    if len(parts) == 1:
        only = parts[0]
        return DayView(
            day=local,
            source=only.source,
            status=only.status,
            reason=only.reason,
            poisoned=only.poisoned,
            categories=only.categories,
            repaired=only.repaired,
            live_total=only.live_total,
            open=only.open,
        )
    source = next(
        (s for s in SOURCE_ORDER if any(p.source == s for p in parts)),
        "none",
    )
    with_data = [p for p in parts if p.source != "none"] or parts
    categories: dict[str, str] = {}
    for part in with_data:
        for category, status in part.categories.items():
            known = categories.get(category)
            if known is None or STATUS_ORDER.index(status) < STATUS_ORDER.index(known):
                categories[category] = status
    status = min((p.status for p in with_data), key=STATUS_ORDER.index) if with_data else "none"
    if any(p.open for p in parts):
        # A local day with hours of today (UTC) is under way: live, even while those hours
        # have no message yet and its closed part is verified.
        source = "live" if source in ("database", "checking") else source
        status = min(status, "live", key=STATUS_ORDER.index)
        categories = {c: min(s, "live", key=STATUS_ORDER.index) for c, s in categories.items()}
    return DayView(
        day=local,
        source=source,
        status=status,
        reason=", ".join(sorted({p.reason for p in parts if p.reason})),
        poisoned=sorted({c for p in parts for c in p.poisoned}),
        categories=categories,
        repaired=sorted({c for p in parts for c in p.repaired}),
    )


def _stored_view(
    chat_id: int,
    day: date,
    *,
    today: date,
    rows: Mapping[str, CoverageRow],
    sums: StoredDay,
    split: Split,
    store: KVStore | None,
    failed: dict[int, set[str]],
    repairs: dict[tuple[date, int], tuple[dict[str, int], dict[str, int]]],
    recheck: bool = False,
) -> DayView:
    """One stored (UTC) day's quality, its sums repaired from the KV counters where a live
    write failed. ``recheck``: a late message came since its last verification."""
    messages_row = rows.get("messages")
    status = messages_row.status if messages_row else "none"
    reason = messages_row.reason if messages_row else ""
    poisoned = {category for category, row in rows.items() if row.poisoned}
    failed_categories = {keys.COLUMN_CATEGORY[c] for columns in failed.values() for c in columns}
    if store is not None:
        for category in sorted(failed_categories - poisoned):  # KV-only marks (database down)
            if poison_read(store.get(keys.poison_key(chat_id, day, category))) is not None:
                poisoned.add(category)
    view = DayView(
        day=day,
        source="none",
        status=status,
        reason=reason,
        poisoned=sorted(poisoned),
        categories={category: row.status for category, row in sorted(rows.items())},
        open=day >= today,
    )
    if day < today and _all_complete(rows) and not poisoned:
        view.source = "checking" if recheck else "database"
        return view
    lost: set[str] = set()
    if store is not None:
        lost = _repair(store, chat_id, day, failed, sums, split, repairs)
    view.repaired = sorted(failed_categories - lost)
    unrepaired = (poisoned - failed_categories) | lost
    if unrepaired or (day < today and reason):
        view.source = "database_unverified"
    elif sums.active:
        view.source = "live"
    return view


def _all_complete(rows: Mapping[str, CoverageRow]) -> bool:
    """Verified: every category the day shows was verified (a missing row was not)."""
    return all(c in rows and rows[c].status == "complete" for c in CATEGORIES)


def _repair(
    store: KVStore,
    chat_id: int,
    day: date,
    failed: Mapping[int, set[str]],
    sums: StoredDay,
    split: Split,
    repairs: dict[tuple[date, int], tuple[dict[str, int], dict[str, int]]],
) -> set[str]:
    """Replace the columns failed writes missed with their KV counters (in ``sums`` and, for
    the members' totals, in ``repairs``); return the categories that could not be repaired
    (the member's counters expired)."""
    lost: set[str] = set()
    if not failed:
        return lost
    stored = _rows(chat_id, day, failed)
    for user_id, columns in sorted(failed.items()):
        # Every counted message adds to the member's messages counter, so it is the member's
        # oldest key of the day: while it exists, so do the others.
        messages = store.get(keys.column_key("message_count", chat_id, day, user_id))
        if not isinstance(messages, int):
            lost.update(keys.COLUMN_CATEGORY[column] for column in columns)
            continue
        before = stored.get(user_id, {})
        after = dict(before)
        for column in sorted(columns):
            value = (
                messages
                if column == "message_count"
                else store.get(keys.column_key(column, chat_id, day, user_id))
            )
            if isinstance(value, int):
                after[column] = value
            else:
                lost.add(keys.COLUMN_CATEGORY[column])
        if after != before:
            repairs[(day, user_id)] = (before, after)
            _add_row(sums, before, split.cut, -1)
            _add_row(sums, after, split.cut, 1)
    return lost


def _add_row(sums: StoredDay, row: dict[str, int], cut: int, sign: int) -> None:
    """Add (``sign`` 1) or take away (-1) one member's row from a stored day's sums."""
    messages = row.get("message_count", 0)
    tail = aggregates.row_tail_messages(row, cut)
    sums.messages += sign * messages
    sums.words += sign * row.get("word_count", 0)
    sums.active += sign * (messages > 0)
    sums.tail_messages += sign * tail
    sums.head_words += sign * aggregates.row_head(row, "word_count", cut)
    sums.head_active += sign * (messages - tail > 0)
    sums.tail_active += sign * (tail > 0)
    hours = sums.hours if sums.hours is not None else [0] * 24
    for hour, column in enumerate(aggregates.HOUR_COLUMNS):
        hours[hour] += sign * row.get(column, 0)
    sums.hours = hours


def _rows(chat_id: int, day: date, users: Iterable[int]) -> dict[int, dict[str, int]]:
    rows = DailyUserStat.objects.filter(chat_id=chat_id, day=day, user_id__in=list(users))
    return {row.pop("user_id"): row for row in rows.values("user_id", *COLUMNS)}


def member_names(
    chat_id: int, members: Iterable[MemberTotals], store: KVStore
) -> list[MemberTotals]:
    """Fill in display names (the hydrated profile, else the KV ``last_message`` entry) and
    the time of each member's last counted message (``last_message``, one ``get_many``)."""
    members = list(members)
    if not members:
        return members
    profiles = {
        profile.user_id: profile
        for profile in ChatUserProfile.objects.filter(
            chat_id=chat_id, user_id__in=[member.user_id for member in members]
        )
    }
    # get_each: an export reads every member of the range, thousands of them.
    lasts = store.get_each([keys.last_message_key(chat_id, m.user_id) for m in members])
    for member, last in zip(members, lasts, strict=True):
        last = last if isinstance(last, dict) else {}
        at = last.get("at")
        if isinstance(at, int) and not isinstance(at, bool) and 0 < at < 2**33:
            member.last_seen = datetime.fromtimestamp(at, UTC)
        profile = profiles.get(member.user_id)
        if profile is not None and profile.display_name:
            member.name, member.username = profile.display_name, profile.username
        elif last.get("name"):
            member.name, member.username = str(last["name"]), str(last.get("username") or "")
        else:
            member.name = member.name or f"user {member.user_id}"
    return members


def known_chats(store: KVStore) -> list[tuple[int, str]]:
    """Chats with statistics (or allowed in settings), with their titles where known, the
    most active first (messages over the last 7 stored days). Bounded: the coverage table has
    a few rows a day per chat, and the week's rows are a week's."""
    ids = set(DailyCoverage.objects.values_list("chat_id", flat=True).distinct())
    ids |= set(StatsChat.objects.values_list("chat_id", flat=True))
    ids |= {chat_id for chat_id in settings.ALLOWED_CHAT_IDS if chat_id < 0}
    titles = dict(StatsChat.objects.values_list("chat_id", "title"))
    recent = dict(  # per chat an index range (chat_id, day), not the whole table
        DailyUserStat.objects.filter(chat_id__in=ids, day__gte=utc_today() - timedelta(days=6))
        .values("chat_id")
        .annotate(n=Sum("message_count"))
        .values_list("chat_id", "n")
    )
    chats = []
    for chat_id in sorted(ids, key=lambda c: (-(recent.get(c) or 0), c)):
        title = titles.get(chat_id) or ""
        if not title:
            meta = store.get(keys.chat_key(chat_id))
            title = str(meta.get("title") or "") if isinstance(meta, dict) else ""
        chats.append((chat_id, title or str(chat_id)))
    return chats


class CoverageRow(NamedTuple):
    """What a read needs of a ``DailyCoverage`` row (tuples: a year is 2,190 of them)."""

    status: str
    reason: str
    poisoned: bool


def _coverage(
    chat_id: int, first: date | None, last: date | None
) -> dict[date, dict[str, CoverageRow]]:
    rows: dict[date, dict[str, CoverageRow]] = {}
    if first is None or last is None or first > last:
        return rows
    for day, category, status, reason, poisoned_at in DailyCoverage.objects.filter(
        chat_id=chat_id, day__gte=first, day__lte=last
    ).values_list("day", "category", "status", "reason", "poisoned_at"):
        rows.setdefault(day, {})[category] = CoverageRow(status, reason, poisoned_at is not None)
    return rows


def chat_titles(chat_ids: Iterable[int]) -> dict[int, str]:
    """The titles the statistics saw of ``chat_ids`` (``FeatureConfig.chat_titles``)."""
    rows = StatsChat.objects.filter(chat_id__in=list(chat_ids)).exclude(title="")
    return dict(rows.values_list("chat_id", "title"))


def counted_chats() -> dict[int, str]:
    """The counted chats and their titles (``FeatureConfig.chats``)."""
    return dict(StatsChat.objects.values_list("chat_id", "title"))


def people_names(user_ids: Iterable[int]) -> dict[int, tuple[str, str]]:
    """The latest name and @username the statistics saw of each of ``user_ids`` in any chat
    (``FeatureConfig.people_names``)."""
    found: dict[int, tuple[str, str]] = {}
    rows = (
        ChatUserProfile.objects.filter(user_id__in=list(user_ids))
        .order_by("user_id", "-updated_at")
        .values_list("user_id", "display_name", "username")
    )
    for user_id, name, username in rows:
        if user_id not in found and (name or username):
            found[user_id] = (name, username)
    return found
