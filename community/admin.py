"""Admin site: the join-request policy of each chat (validated by ``ChatPolicy.clean``) and
the member policy (welcome, rules, captcha, anti-raid; validated by ``MemberPolicy.clean``).
Every save and deletion of a policy is recorded in the audit log."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _
from unfold.admin import ModelAdmin

from community.models import BotChat, ChatPolicy, MemberMovement, MemberPolicy, SpamListEntry
from community.web import (
    DECIDE_PERMISSION,
    VIEW_PERMISSION,
    join_request_decide_view,
    join_request_list,
)
from telegram_bot.audit.admin import AuditedDeletesMixin, AuditedModelAdmin
from telegram_bot.ops.admin_site import ReadOnlyAdminMixin, register_view
from telegram_bot.ops.durations import Duration, DurationFieldsMixin
from telegram_bot.ops.names import chat_column, chat_formfield, name_page, person_column

register_view(
    "community/join-requests/",
    join_request_list,
    name="community-join-requests",
    title=_("Join requests"),
    permissions=(VIEW_PERMISSION,),
)
register_view(
    "community/join-requests/<str:token>/decide/",
    join_request_decide_view,
    name="community-join-request-decide",
    title="",
    permissions=(DECIDE_PERMISSION,),
)


@admin.register(ChatPolicy)
class ChatPolicyAdmin(DurationFieldsMixin, AuditedModelAdmin):
    durations = {
        "timeout_seconds": Duration(
            _("time to answer"),
            _("30s to 5m (Telegram allows the private message for 5 minutes after the request)."),
        ),
    }

    list_display = (chat_column(), "mode", "on_timeout", "welcome_enabled", "updated_at")
    list_filter = ("mode", "welcome_enabled")
    search_fields = ("chat_id", "title")
    fieldsets = (
        (None, {"fields": ("chat_id", "title", "mode")}),
        (
            _("Question"),
            {
                "fields": (
                    "question",
                    "answers",
                    "timeout_seconds",
                    "on_timeout",
                    "on_wrong_answer",
                ),
                "description": _('Used when the mode is "Ask the requester a question".'),
            },
        ),
        (_("Welcome"), {"fields": ("welcome_enabled", "welcome_text")}),
    )

    def formfield_for_dbfield(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if db_field.name == "chat_id":
            return chat_formfield(db_field)
        return super().formfield_for_dbfield(db_field, request, **kwargs)

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> Any:
        return name_page(super().changelist_view(request, extra_context))


@admin.register(MemberPolicy)
class MemberPolicyAdmin(DurationFieldsMixin, AuditedModelAdmin):
    durations = {
        "captcha_seconds": Duration(
            _("captcha time"),
            _("30s to 10m; no answer removes the member (they may join again)."),
        ),
        "raid_window_seconds": Duration(_("anti-raid window"), _("5s to 1h.")),
        "raid_strict_minutes": Duration(
            _("strict mode lasts"), _("How long the strict mode lasts, 1m to 24h."), unit=60
        ),
    }

    list_display = (
        chat_column(),
        "welcome_enabled",
        "goodbye_enabled",
        "captcha_enabled",
        "raid_joins",
        "updated_at",
    )
    list_filter = ("welcome_enabled", "captcha_enabled")
    search_fields = ("chat_id", "title")
    fieldsets = (
        (None, {"fields": ("chat_id", "title")}),
        (
            _("Welcome and rules"),
            {
                "fields": (
                    "welcome_enabled",
                    "welcome_text",
                    "welcome_buttons",
                    "delete_previous_welcome",
                    "rules_text",
                    "goodbye_enabled",
                    "goodbye_text",
                    "clean_service_messages",
                )
            },
        ),
        (_("Captcha"), {"fields": ("captcha_enabled", "captcha_seconds")}),
        (
            _("Anti-raid"),
            {
                "fields": (
                    "raid_joins",
                    "raid_window_seconds",
                    "raid_strict_minutes",
                    "raid_mode",
                ),
                "description": _(
                    "More joins than the threshold within the window turns on a strict mode "
                    "(captcha for every new member, or join requests only) and alerts the admins."
                ),
            },
        ),
        (
            _("Spam lists"),
            {
                "fields": ("spam_action",),
                "description": _(
                    "New members are checked against the local spam list and, when configured, "
                    "a spam-check service (SPAMCHECK_URL) before any captcha or welcome."
                ),
            },
        ),
    )

    def formfield_for_dbfield(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if db_field.name == "chat_id":
            return chat_formfield(db_field)
        return super().formfield_for_dbfield(db_field, request, **kwargs)

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> Any:
        return name_page(super().changelist_view(request, extra_context))


@admin.register(BotChat)
class BotChatAdmin(AuditedDeletesMixin, ModelAdmin):
    """Read only: Telegram's my_chat_member updates are the source."""

    list_display = ("chat_id", "title", "chat_type", "status", "is_member", "updated_at")
    list_filter = ("is_member", "status", "chat_type")
    search_fields = ("chat_id", "title")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(MemberMovement)
class MemberMovementAdmin(ReadOnlyAdminMixin, ModelAdmin):
    """Read only: joins and leaves as the bot saw them (the overview's cards link here)."""

    list_display = ("at", "kind", chat_column(), person_column())
    list_filter = ("kind", "day", "chat_id")
    search_fields = ("=chat_id", "=user_id")
    date_hierarchy = "at"
    ordering = ("-at",)

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> Any:
        return name_page(super().changelist_view(request, extra_context), people=("user_id",))


@admin.register(SpamListEntry)
class SpamListEntryAdmin(AuditedModelAdmin):
    """The local spam list: filled by ``manage.py import_spamlist``; an entry can be removed
    here (a false positive)."""

    list_display = ("user_id", "source", "reason", "added_at")
    list_filter = ("source",)
    search_fields = ("user_id", "reason")
    readonly_fields = ("added_at",)
