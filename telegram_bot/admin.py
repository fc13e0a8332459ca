"""Admin site: bot admins (with lockout protection), delivery failures, blocked chats, and the
dead-letter pages."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from telegram_bot import admins
from telegram_bot.admin_site import register_view
from telegram_bot.dead_letter_views import dead_letter_drop, dead_letter_list, dead_letter_replay
from telegram_bot.errors import BotError
from telegram_bot.models import BlockedChat, BotAdmin, DeliveryFailure
from telegram_bot.redaction import redact

register_view("dead-letters/", dead_letter_list, name="dead-letters", title="Dead letters")
register_view(
    "dead-letters/<int:update_id>/replay/", dead_letter_replay, name="dead-letter-replay", title=""
)
register_view(
    "dead-letters/<int:update_id>/drop/", dead_letter_drop, name="dead-letter-drop", title=""
)


@admin.register(BotAdmin)
class BotAdminAdmin(admin.ModelAdmin):
    list_display = ("telegram_id", "display_name", "added_by", "created_at")
    search_fields = ("telegram_id", "display_name")
    fields = ("telegram_id", "display_name")

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if obj is not None and not self._removable(obj):
            return False
        return super().has_delete_permission(request, obj)

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> Any:
        extra = {
            "subtitle": "The owner and ADMIN_TELEGRAM_IDS are admins too (from the "
            f"environment): {sorted(admins.configured_admin_ids()) or 'none'}"
        }
        return super().changelist_view(request, {**(extra_context or {}), **extra})

    def save_model(self, request: HttpRequest, obj: BotAdmin, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        admins.admin_add(telegram_id=obj.telegram_id, added_by=None, display_name=obj.display_name)

    def delete_model(self, request: HttpRequest, obj: BotAdmin) -> None:
        self.delete_queryset(request, BotAdmin.objects.filter(pk=obj.pk))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[BotAdmin]) -> None:
        for telegram_id in queryset.values_list("telegram_id", flat=True):
            try:
                admins.admin_remove(telegram_id=telegram_id)
            except BotError as exc:
                messages.error(request, f"{telegram_id}: {exc.user_message}")

    @staticmethod
    def _removable(obj: BotAdmin) -> bool:
        others = admins.configured_admin_ids() | set(
            BotAdmin.objects.exclude(pk=obj.pk).values_list("telegram_id", flat=True)
        )
        return bool(others)


@admin.register(DeliveryFailure)
class DeliveryFailureAdmin(admin.ModelAdmin):
    list_display = ("created_at", "chat_id", "purpose", "error_class", "error")
    list_filter = ("purpose", "error_class")
    search_fields = ("chat_id",)
    fields = readonly_fields = ("chat_id", "purpose", "error_class", "error", "created_at")

    @admin.display(description="description")
    def error(self, obj: DeliveryFailure) -> str:
        # Stored texts are redacted when written; redact again in case one slipped through.
        return redact(obj.description)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(BlockedChat)
class BlockedChatAdmin(admin.ModelAdmin):
    list_display = ("chat_id", "reason", "blocked_at")
    search_fields = ("chat_id",)
    readonly_fields = ("chat_id", "reason", "blocked_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False
