"""``backfill_aggregates --dry-run``: what a run would change, without writing or leasing."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import date

from stats import keys, verify
from stats.backfill.state import utc_today
from stats.models import DailyUserStat
from telegram_bot.state import KVStore


@dataclass
class DryRunReport:
    cutoff_day: date
    keys_per_family: Counter[str] = field(default_factory=Counter)
    rows: int = 0
    rows_to_change: int = 0
    days_complete: int = 0
    days_mismatch: int = 0
    days_missing_total: int = 0


def backfill_dry_run(*, store: KVStore, today: date | None = None) -> DryRunReport:
    """Read every counter below the cutoff and compare it with the database."""
    report = DryRunReport(cutoff_day=today or utc_today())
    wanted: dict[tuple[int, date, int], dict[str, int]] = {}
    for family in keys.COUNTER_FAMILIES:
        for key in store.scan_all(family):
            counter = keys.parse_counter_key(key)
            if counter is None or counter.day >= report.cutoff_day:
                continue
            report.keys_per_family[family.rstrip(":")] += 1
            value = store.get(key)
            if isinstance(value, int):
                row = wanted.setdefault((counter.chat_id, counter.day, counter.user_id), {})
                row[counter.column] = value
    report.rows = len(wanted)
    for (chat_id, day, user_id), values in wanted.items():
        current = DailyUserStat.objects.filter(chat_id=chat_id, day=day, user_id=user_id).first()
        # A run never lowers a cell (GREATEST): only a KV value above the database changes it.
        if current is None or any(getattr(current, c) < v for c, v in values.items()):
            report.rows_to_change += 1
    for chat_id, day in sorted({(chat_id, day) for chat_id, day, _ in wanted}):
        # The day as the run would leave it, verified column by column (stats.verify).
        sums: Counter[str] = Counter()
        stored = DailyUserStat.objects.filter(chat_id=chat_id, day=day)
        rows = {row["user_id"]: row for row in stored.values("user_id", *verify.VERIFIED_COLUMNS)}
        for user_id in rows.keys() | {u for c, d, u in wanted if (c, d) == (chat_id, day)}:
            kv = wanted.get((chat_id, day, user_id), {})
            db = rows.get(user_id, {})
            for column in verify.VERIFIED_COLUMNS:
                sums[column] += max(db.get(column, 0), kv.get(column, 0))
        reason = verify.verdict(sums, verify.read_totals(store, chat_id, day))
        if reason == "missing_activity_total":
            report.days_missing_total += 1
        elif reason:
            report.days_mismatch += 1
        else:
            report.days_complete += 1
    return report
