"""``backfill_aggregates --dry-run``: what a run would change, without writing or leasing."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import date

from stats import keys
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
        if current is None or any(getattr(current, c) != v for c, v in values.items()):
            report.rows_to_change += 1
    sums: Counter[tuple[int, date]] = Counter()
    for (chat_id, day, _), values in wanted.items():
        sums[(chat_id, day)] += values.get("message_count", 0)
    for (chat_id, day), summed in sorted(sums.items()):
        total = store.get(keys.activity_key(chat_id, day))
        if not isinstance(total, int) or total <= 0:
            report.days_missing_total += 1
        elif summed == total:
            report.days_complete += 1
        else:
            report.days_mismatch += 1
    return report
