"""The audit log in the admin site: a read-only list with filters and search, and a CSV
export that needs its own permission (``telegram_bot.export_auditentry``)."""

from __future__ import annotations

import csv
from typing import Any

from django.contrib import admin
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.translation import gettext_lazy

from telegram_bot.models import AuditEntry

CSV_COLUMNS = (
    "created_at",
    "actor_id",
    "actor_name",
    "source",
    "chat_id",
    "action",
    "target_id",
    "target_name",
    "reason",
    "outcome",
    "detail",
    "update_id",
)
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):
    list_display = (
        "created_at",
        "actor",
        "source",
        "chat_id",
        "action",
        "target",
        "reason",
        "outcome",
    )
    list_filter = ("action", "outcome", "source", ("created_at", admin.DateFieldListFilter))
    search_fields = ("actor_name", "target_name", "reason", "detail")
    date_hierarchy = "created_at"
    actions = ("export_csv",)
    list_per_page = 100

    @admin.display(description="who")
    def actor(self, entry: AuditEntry) -> str:
        return _person(entry.actor_id, entry.actor_name)

    @admin.display(description="on whom")
    def target(self, entry: AuditEntry) -> str:
        return _person(entry.target_id, entry.target_name)

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[AuditEntry], search_term: str
    ) -> tuple[QuerySet[AuditEntry], bool]:
        """Text search, plus exact ids: a number finds its actor, chat, target or update."""
        results, distinct = super().get_search_results(request, queryset, search_term)
        term = search_term.strip()
        if term.lstrip("-").isdigit() and len(term) <= 19:
            number = int(term)
            results |= queryset.filter(
                Q(actor_id=number) | Q(chat_id=number) | Q(target_id=number) | Q(update_id=number)
            )
        return results, distinct

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_export_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.has_perm("telegram_bot.export_auditentry"))

    @admin.action(
        description=gettext_lazy("Export selected entries as CSV"), permissions=["export"]
    )
    def export_csv(self, request: HttpRequest, queryset: QuerySet[AuditEntry]) -> HttpResponse:
        response = HttpResponse(content_type="text/csv; charset=utf-8")
        stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
        response["Content-Disposition"] = f'attachment; filename="audit-{stamp}.csv"'
        writer = csv.writer(response)
        writer.writerow(CSV_COLUMNS)
        for row in queryset.order_by("created_at", "id").values_list(*CSV_COLUMNS):
            writer.writerow([csv_cell(value) for value in row])
        return response


def csv_cell(value: Any) -> str:
    """A CSV cell that a spreadsheet will not run as a formula (names and reasons come from
    Telegram users)."""
    if value is None:
        return ""
    text = value.isoformat() if hasattr(value, "isoformat") else str(value)
    if isinstance(value, str) and text.startswith(_FORMULA_STARTS):
        return "'" + text
    return text


def _person(telegram_id: int | None, name: str) -> str:
    if telegram_id is None:
        return name or "-"
    return f"{name} ({telegram_id})" if name else str(telegram_id)
