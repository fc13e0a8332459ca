"""Admin site: per-chat moderation settings (every save recorded in the audit log) and the
warnings given (read-only)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _
from unfold.admin import ModelAdmin

from moderation.models import ChatSettings, Warning
from moderation.services import audit_settings
from moderation.settings_page import VIEW_PERMISSION as SETTINGS_PERMISSION
from moderation.settings_page import chat_settings_page, chats_settings_page
from moderation.web import ACT_PERMISSION, member_action_view
from telegram_bot import features
from telegram_bot.audit import Actor
from telegram_bot.audit.admin import AuditedDeletesMixin
from telegram_bot.numbers import ascii_int
from telegram_bot.ops.admin_site import ReadOnlyAdminMixin, register_view
from telegram_bot.ops.durations import Duration, DurationFieldsMixin
from telegram_bot.ops.names import chat_column, chat_formfield, name_page, person_column

# The member page's actions (chat ids are negative: the ids are checked in the view).
register_view(
    "moderation/member/<str:chat_id>/<str:user_id>/act/",
    member_action_view,
    name="moderation-member-action",
    title="",
    permissions=(ACT_PERMISSION,),
)
register_view(
    "moderation/settings/",
    chats_settings_page,
    name="moderation-settings-by-chat",
    title=_("Moderation settings by chat"),
    permissions=(SETTINGS_PERMISSION,),
)
register_view(
    "moderation/settings/<str:chat_id>/",
    chat_settings_page,
    name="moderation-chat-settings",
    title="",
    permissions=(SETTINGS_PERMISSION,),
)


@admin.register(ChatSettings)
class ChatSettingsAdmin(DurationFieldsMixin, AuditedDeletesMixin, ModelAdmin):
    durations = {
        "warn_action_seconds": Duration(
            _("duration of the action at the limit"),
            _("How long the warning action lasts, 30s to 366d."),
        ),
        "flood_seconds": Duration(
            _("flood window"), _("... within this time is flooding, 2s to 5m.")
        ),
        "flood_action_seconds": Duration(
            _("anti-flood action duration"),
            _("How long the anti-flood mute or ban lasts, 30s to 366d."),
        ),
        "violation_action_seconds": Duration(
            _("violation action duration"),
            _("How long a violation's mute or ban lasts, 30s to 366d."),
        ),
    }

    list_display = (
        chat_column(),
        "in_effect",
        "warn_limit",
        "warn_action",
        "flood_action",
        "violation_low",
        "violation_medium",
        "violation_high",
        "updated_at",
    )
    search_fields = ("title", "=chat_id")
    fieldsets = (
        (None, {"fields": ("chat_id", "title")}),
        (
            _("Warnings"),
            {
                "fields": (
                    "warn_limit",
                    "warn_action",
                    "warn_action_seconds",
                    "warn_expiry_days",
                )
            },
        ),
        (
            _("Anti-flood"),
            {"fields": ("flood_action", "flood_messages", "flood_seconds", "flood_action_seconds")},
        ),
        (
            _("Violations (severity from the statistics rules)"),
            {
                "fields": (
                    "violation_low",
                    "violation_medium",
                    "violation_high",
                    "violation_action_seconds",
                )
            },
        ),
        (_("Log channel"), {"fields": ("log_chat_id",)}),
    )

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        return ("chat_id",) if obj is not None else ()

    def formfield_for_dbfield(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if db_field.name == "chat_id":
            return chat_formfield(db_field)
        if db_field.name == "log_chat_id":
            return chat_formfield(
                db_field,
                help_text=_(
                    "Optional: a channel or group where every audit-log entry of this chat "
                    "(moderation, join requests, ...) is also posted. The bot must be able to "
                    "post there."
                ),
            )
        return super().formfield_for_dbfield(db_field, request, **kwargs)

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> Any:
        return name_page(super().changelist_view(request, extra_context))

    @admin.display(description=_("in effect"))
    def in_effect(self, obj: ChatSettings) -> str:
        url = reverse("admin:moderation-chat-settings", args=[obj.chat_id])
        return format_html('<a href="{}">{}</a>', url, _("in words"))

    def get_changeform_initial_data(self, request: HttpRequest) -> dict[str, Any]:
        """``?chat_id=`` (the settings-in-effect page links here with it) and ``?title=``;
        a chat id that is not one is left out rather than shown."""
        initial = super().get_changeform_initial_data(request)
        if "chat_id" in initial and ascii_int(str(initial["chat_id"]), signed=True) is None:
            del initial["chat_id"]
        return initial

    def save_model(self, request: HttpRequest, obj: ChatSettings, form: Any, change: bool) -> None:
        if not obj.title:  # the chosen chat's title, when an app knows it
            obj.title = features.chat_titles([obj.chat_id]).get(obj.chat_id, "")[:200]
        super().save_model(request, obj, form, change)
        changed = ", ".join(f"{name}={form.cleaned_data.get(name)}" for name in form.changed_data)
        actor = Actor(None, f"admin:{request.user.get_username()}")
        audit_settings(obj, actor=actor, source="admin", changes=changed or "no change")


@admin.register(Warning)
class WarningAdmin(ReadOnlyAdminMixin, ModelAdmin):
    list_display = (
        "created_at",
        chat_column(),
        person_column(),
        person_column("moderator_id", _("moderator")),
        "reason",
        "expires_at",
        "revoked",
        "spent",
        "triggered",
    )
    list_filter = ("revoked", "spent", "triggered")
    search_fields = ("=chat_id", "=user_id", "reason")

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> Any:
        return name_page(
            super().changelist_view(request, extra_context), people=("user_id", "moderator_id")
        )
