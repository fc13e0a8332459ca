"""``manage.py stats_totals``: store the read totals (``stats.totals``) of the verified days
that have none, such as the days verified before the totals existed, and the member sums
(``stats.member_months``) of the closed months that have none (months closed before they
existed, or whose sums an erasure dropped). The dashboard reads are exact without them (the
rows are summed), only slower."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from stats.member_months import month_fill
from stats.totals import totals_fill


class Command(BaseCommand):
    help = (
        "Store the read totals of verified days and the member sums of closed months that "
        "have none."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write(f"stored the totals of {totals_fill()} verified days")
        self.stdout.write(f"stored the member sums of {month_fill()} closed months")
