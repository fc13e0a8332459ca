"""Broadcasts in the console: write, preview to yourself, start now or at a time, watch the
progress, pause, resume, cancel. Subscribers are listed read-only. Every write goes through
``broadcasts.services``."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from broadcasts import selectors, services
from broadcasts.forms import BroadcastForm
from broadcasts.models import Broadcast, BroadcastStatus, Subscriber
from telegram_bot.audit.admin import AuditedModelAdmin, audited_action

LIMITS_HELP = gettext_lazy(
    "Telegram lets a bot send about 30 messages a second in all and 1 a second to one person. "
    "A broadcast uses at most 80 percent of that rate (OUTGOING_BULK_SHARE_PERCENT), so the bot's "
    "answers to its users are never held up: 10,000 recipients take about 7 minutes. "
    "If Telegram asks the bot to slow down, every sender waits, and the broadcast carries on "
    "afterwards. Each recipient gets the message at most once: a send whose answer was lost "
    "(a crash at that moment) is counted as 'outcome unknown' and never repeated."
)


@admin.register(Broadcast)
class BroadcastAdmin(AuditedModelAdmin):
    form = BroadcastForm
    list_display = ("id", "summary", "status", "send_at", "progress_display", "last_error")
    list_filter = ("status",)
    search_fields = ("text",)
    actions = ("send_preview", "start", "pause", "resume", "cancel")
    readonly_fields = ("status", "progress_display", "last_error", "created_by", "started_at")
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "text",
                    "parse_mode",
                    "photo",
                    "media_kind",
                    "buttons",
                    "disable_notification",
                )
            },
        ),
        (
            gettext_lazy("Who gets it"),
            {"fields": ("segment_language", "segment_chat_id", "segment_joined_since")},
        ),
        (
            gettext_lazy("When"),
            {"fields": ("send_at", "preview_chat_id"), "description": LIMITS_HELP},
        ),
        (
            gettext_lazy("Progress"),
            {"fields": ("status", "progress_display", "last_error", "created_by", "started_at")},
        ),
    )

    @admin.display(description=gettext_lazy("message"))
    def summary(self, obj: Broadcast) -> str:
        return str(obj).split(" ", 1)[-1]

    @admin.display(description=gettext_lazy("progress"))
    def progress_display(self, obj: Broadcast) -> str:
        if obj.pk is None or obj.status in (BroadcastStatus.DRAFT, BroadcastStatus.SCHEDULED):
            return _("%(n)s subscribers in the segment now") % {
                "n": selectors.segment(obj).count() if obj.pk else "-"
            }
        p = selectors.progress(obj.pk)
        return format_html(
            "{}",
            _(
                "%(sent)s sent, %(blocked)s blocked, %(failed)s failed, %(unknown)s unknown, "
                "%(left)s left, of %(total)s"
            )
            % {
                "sent": p.sent,
                "blocked": p.blocked,
                "failed": p.failed,
                "unknown": p.unknown,
                "left": p.left,
                "total": p.total,
            },
        )

    def get_readonly_fields(self, request: HttpRequest, obj: Broadcast | None = None) -> Any:
        fields = list(self.readonly_fields)
        if obj is not None and obj.status != BroadcastStatus.DRAFT:
            fields += [f for f in BroadcastForm.Meta.fields if f not in fields]
        return fields

    def save_model(self, request: HttpRequest, obj: Broadcast, form: Any, change: bool) -> None:
        if not change:
            obj.created_by = f"admin:{request.user.get_username()}"
        super().save_model(request, obj, form, change)

    def has_delete_permission(self, request: HttpRequest, obj: Broadcast | None = None) -> bool:
        if obj is not None and obj.status != BroadcastStatus.DRAFT:
            return False
        return super().has_delete_permission(request, obj)

    def _each(
        self, request: HttpRequest, queryset: QuerySet[Broadcast], act: Any, done: str
    ) -> None:
        for broadcast in queryset:
            try:
                if act(broadcast):
                    self.message_user(request, done % {"id": broadcast.pk}, messages.SUCCESS)
                else:
                    self.message_user(
                        request,
                        _("Broadcast #%(id)s is %(status)s: nothing to do.")
                        % {"id": broadcast.pk, "status": broadcast.get_status_display()},
                        messages.WARNING,
                    )
            except services.BroadcastError as exc:
                self.message_user(request, str(exc), messages.ERROR)

    @admin.action(description=gettext_lazy("Send a preview to me"), permissions=["change"])
    @audited_action("broadcast.preview")
    def send_preview(self, request: HttpRequest, queryset: QuerySet[Broadcast]) -> None:
        self._each(
            request,
            queryset,
            lambda b: services.broadcast_preview(broadcast_id=b.pk),
            _("Preview of broadcast #%(id)s sent."),
        )

    @admin.action(description=gettext_lazy("Start (now or at its time)"), permissions=["change"])
    @audited_action("broadcast.start")
    def start(self, request: HttpRequest, queryset: QuerySet[Broadcast]) -> None:
        self._each(
            request,
            queryset,
            lambda b: services.broadcast_start(broadcast_id=b.pk, send_at=b.send_at),
            _("Broadcast #%(id)s started."),
        )

    @admin.action(description=gettext_lazy("Pause"), permissions=["change"])
    @audited_action("broadcast.pause")
    def pause(self, request: HttpRequest, queryset: QuerySet[Broadcast]) -> None:
        self._each(
            request,
            queryset,
            lambda b: services.broadcast_pause(broadcast_id=b.pk),
            _("Broadcast #%(id)s paused."),
        )

    @admin.action(description=gettext_lazy("Resume"), permissions=["change"])
    @audited_action("broadcast.resume")
    def resume(self, request: HttpRequest, queryset: QuerySet[Broadcast]) -> None:
        self._each(
            request,
            queryset,
            lambda b: services.broadcast_resume(broadcast_id=b.pk),
            _("Broadcast #%(id)s resumed."),
        )

    @admin.action(description=gettext_lazy("Cancel"), permissions=["change"])
    @audited_action("broadcast.cancel")
    def cancel(self, request: HttpRequest, queryset: QuerySet[Broadcast]) -> None:
        self._each(
            request,
            queryset,
            lambda b: services.broadcast_cancel(broadcast_id=b.pk),
            _("Broadcast #%(id)s cancelled."),
        )


@admin.register(Subscriber)
class SubscriberAdmin(admin.ModelAdmin):
    list_display = ("user_id", "first_name", "username", "language", "status", "joined_at")
    list_filter = ("status", "language")
    search_fields = ("user_id", "first_name", "username")
    readonly_fields = (
        "user_id",
        "first_name",
        "username",
        "language",
        "status",
        "joined_at",
        "changed_at",
    )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
