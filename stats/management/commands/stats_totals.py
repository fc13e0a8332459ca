"""``manage.py stats_totals``: store the read totals (``stats.totals``) of the verified days
that have none, such as the days verified before the totals existed. The dashboard reads are
exact without them (the days' rows are summed), only slower."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from stats.totals import totals_fill


class Command(BaseCommand):
    help = "Store the read totals of verified days that have none (days verified before them)."

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write(f"stored the totals of {totals_fill()} verified days")
