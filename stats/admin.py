"""Admin site: the statistics dashboard, the operators' settings and rules, and read-only views
of the aggregates, their coverage and the backfill job."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.translation import gettext_lazy
from unfold.admin import ModelAdmin

from stats.api import PERMISSION
from stats.config import counting_config_clear
from stats.member_page import member_page
from stats.models import (
    BackfillState,
    DailyCoverage,
    DailyUserStat,
    StatsSettings,
    ViolationRule,
)
from stats.today import today_by_chat
from stats.views import stats_dashboard, stats_export_csv, stats_export_daily_csv
from telegram_bot.audit.admin import AuditedModelAdmin
from telegram_bot.ops.admin_site import ReadOnlyAdminMixin, register_view

SETTINGS_PK = 1  # the one row stats.config reads

register_view(
    "stats/",
    stats_dashboard,
    name="stats-dashboard",
    title=gettext_lazy("Statistics"),
    permissions=(PERMISSION,),
)
register_view(
    "stats/today/",
    today_by_chat,
    name="stats-today-by-chat",
    title=gettext_lazy("Today by chat"),
    permissions=(PERMISSION,),
)
register_view(
    "stats/export.csv", stats_export_csv, name="stats-export", title="", permissions=(PERMISSION,)
)
register_view(
    "stats/daily.csv",
    stats_export_daily_csv,
    name="stats-export-daily",
    title="",
    permissions=(PERMISSION,),
)

# One member of one chat (chat ids are negative: the view checks both ids).
register_view(
    "stats/member/<str:chat_id>/<str:user_id>/",
    member_page,
    name="stats-member",
    title="",
    permissions=(PERMISSION,),
)


class ReadOnlyAdmin(ReadOnlyAdminMixin, ModelAdmin):
    pass


@admin.register(StatsSettings)
class StatsSettingsAdmin(AuditedModelAdmin):
    """One object (pk 1): the list and the add page lead to its form, which shows the defaults
    until the first save creates the row."""

    def get_object(self, request: HttpRequest, object_id: str, from_field: Any = None) -> Any:
        if object_id != str(SETTINGS_PK):
            # Any other id: Django's own lookup (a missing row redirects after, not before,
            # the permission check of the history page).
            return super().get_object(request, object_id, from_field)
        return StatsSettings.objects.filter(pk=SETTINGS_PK).first() or StatsSettings(pk=SETTINGS_PK)

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        if not self.has_view_or_change_permission(request):
            raise PermissionDenied
        return HttpResponseRedirect(reverse("admin:stats_statssettings_change", args=[SETTINGS_PK]))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: StatsSettings, form: Any, change: bool) -> None:
        obj.pk = SETTINGS_PK
        super().save_model(request, obj, form, change)
        counting_config_clear()


@admin.register(ViolationRule)
class ViolationRuleAdmin(AuditedModelAdmin):
    list_display = ("name", "kind", "severity", "enabled")
    list_filter = ("kind", "severity", "enabled")

    def save_model(self, request: HttpRequest, obj: ViolationRule, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        counting_config_clear()

    def delete_model(self, request: HttpRequest, obj: ViolationRule) -> None:
        super().delete_model(request, obj)
        counting_config_clear()


@admin.register(DailyUserStat)
class DailyUserStatAdmin(ReadOnlyAdmin):
    list_display = (
        "chat_id",
        "day",
        "user_id",
        "message_count",
        "word_count",
        "voice_count",
        "video_note_count",
        "profanity_count",
    )
    list_filter = ("day",)
    search_fields = ("chat_id", "user_id")
    date_hierarchy = "day"


@admin.register(DailyCoverage)
class DailyCoverageAdmin(ReadOnlyAdmin):
    list_display = ("chat_id", "day", "category", "status", "source", "reason", "poisoned")
    list_filter = ("status", "category", "source", "reason")
    search_fields = ("chat_id",)
    date_hierarchy = "day"

    @admin.display(boolean=True, description=gettext_lazy("poisoned"))
    def poisoned(self, obj: DailyCoverage) -> bool:
        return obj.poisoned


@admin.register(BackfillState)
class BackfillStateAdmin(ReadOnlyAdmin):
    list_display = (
        "job_name",
        "status",
        "phase",
        "cutoff_day",
        "keys_done",
        "lease_owner",
        "lease_expires_at",
        "revision",
        "updated_at",
    )
