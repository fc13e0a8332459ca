from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from telegram_bot.scheduling import schedules_sync


class Command(BaseCommand):
    help = "Create, update and remove the django-q2 schedules this product declares (idempotent)."

    def handle(self, *args: Any, **options: Any) -> None:
        changes = schedules_sync()
        for kind in ("created", "updated", "deleted"):
            for name in changes[kind]:
                self.stdout.write(f"schedule {name}: {kind}")
        self.stdout.write(f"schedules in sync ({len(changes['unchanged'])} unchanged)")
