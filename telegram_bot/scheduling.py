"""Schedules are declared in code and reconciled into django-q2 rows by name, idempotently.

Never at import time or in ``AppConfig.ready``: ``manage.py sync_schedules`` (run by the run
command and by deployments) creates, updates and removes the rows this product owns. Rows are
owned when their name starts with ``OWNED_PREFIX``; schedules an operator added by hand in the
admin site are left alone. A feature switched off (``FEATURES_DISABLED``) declares none, so its
rows are removed, and created again by the first sync after it is switched back on.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from telegram_bot.features import schedule_lists

OWNED_PREFIX = "tgcp."


@dataclass(frozen=True)
class ScheduleSpec:
    name: str
    func: str
    minutes: int

    @property
    def row_name(self) -> str:
        return OWNED_PREFIX + self.name


def declared_schedules() -> list[ScheduleSpec]:
    specs: list[ScheduleSpec] = []
    for declared in schedule_lists():
        specs.extend(declared)
    names = [spec.name for spec in specs]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(f"schedules declared twice: {', '.join(duplicates)}")
    return specs


@transaction.atomic
def schedules_sync() -> dict[str, list[str]]:
    """Make django-q2's schedule rows match the declarations; return what changed."""
    from django_q.models import Schedule

    changes: dict[str, list[str]] = {"created": [], "updated": [], "deleted": [], "unchanged": []}
    specs = declared_schedules()
    for spec in specs:
        wanted = {
            "func": spec.func,
            "schedule_type": Schedule.MINUTES,
            "minutes": spec.minutes,
            "repeats": -1,
        }
        row = Schedule.objects.select_for_update().filter(name=spec.row_name).first()
        if row is None:
            Schedule.objects.create(name=spec.row_name, **wanted)
            changes["created"].append(spec.name)
        elif any(getattr(row, field) != value for field, value in wanted.items()):
            for field, value in wanted.items():
                setattr(row, field, value)
            row.save()
            changes["updated"].append(spec.name)
        else:
            changes["unchanged"].append(spec.name)
    declared = {spec.row_name for spec in specs}
    stale = Schedule.objects.filter(name__startswith=OWNED_PREFIX).exclude(name__in=declared)
    changes["deleted"] = sorted(
        name.removeprefix(OWNED_PREFIX) for name in stale.values_list("name", flat=True)
    )
    stale.delete()
    return changes
