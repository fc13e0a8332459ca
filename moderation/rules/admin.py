"""Admin site: a chat's locks, allowed link domains, blocklist and approved members; every
save and deletion recorded in the audit log (``AuditedModelAdmin``). A blocklist pattern is
stored in the form the bot matches (``blocklist.normalise``), a domain in lower case."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.utils.translation import gettext_lazy as _

from moderation.rules import blocklist, kinds
from moderation.rules.models import (
    AllowedDomain,
    Approval,
    BanList,
    BanListChat,
    BlocklistEntry,
    Filter,
    Lock,
    Note,
    Report,
    ReportSetting,
    SharedBan,
)
from telegram_bot.audit.admin import AuditedModelAdmin
from telegram_bot.ops.durations import Duration, DurationFieldsMixin

DURATION = Duration(_("duration"), _("How long a mute or ban lasts, 30s to 366d; empty: for ever."))


@admin.register(Lock)
class LockAdmin(DurationFieldsMixin, AuditedModelAdmin):
    durations = {"seconds": DURATION}
    list_display = ("chat_id", "kind", "action", "seconds", "updated_at")
    list_filter = ("kind", "action")
    search_fields = ("=chat_id",)


class DomainForm(forms.ModelForm):
    class Meta:
        model = AllowedDomain
        fields = ("chat_id", "domain")

    def clean_domain(self) -> str:
        domain = kinds.host_of(self.cleaned_data["domain"].strip().lower())
        if "." not in domain:
            raise forms.ValidationError(_("Not a domain."))
        return domain


@admin.register(AllowedDomain)
class AllowedDomainAdmin(AuditedModelAdmin):
    form = DomainForm
    list_display = ("chat_id", "domain", "created_at")
    search_fields = ("=chat_id", "domain")


class BlocklistForm(forms.ModelForm):
    class Meta:
        model = BlocklistEntry
        fields = ("chat_id", "pattern", "action", "seconds")

    def clean_pattern(self) -> str:
        try:
            return blocklist.normalise(self.cleaned_data["pattern"])
        except blocklist.PatternError as exc:
            raise forms.ValidationError(str(exc)) from None


@admin.register(BlocklistEntry)
class BlocklistEntryAdmin(DurationFieldsMixin, AuditedModelAdmin):
    form = BlocklistForm
    durations = {"seconds": DURATION}
    list_display = ("chat_id", "pattern", "action", "seconds", "created_at")
    list_filter = ("action",)
    search_fields = ("=chat_id", "pattern")


@admin.register(Approval)
class ApprovalAdmin(AuditedModelAdmin):
    list_display = ("chat_id", "user_id", "name", "approved_by", "created_at")
    search_fields = ("=chat_id", "=user_id", "name")

    def get_readonly_fields(self, request: Any, obj: Any = None) -> tuple[str, ...]:
        return ("approved_by",)


@admin.register(Note)
class NoteAdmin(AuditedModelAdmin):
    list_display = ("chat_id", "name", "admin_only", "media_kind", "updated_at")
    list_filter = ("admin_only",)
    search_fields = ("=chat_id", "name", "text")
    readonly_fields = ("created_by",)


class FilterForm(forms.ModelForm):
    class Meta:
        model = Filter
        fields = ("chat_id", "keyword", "text", "buttons", "media_kind", "file_id")

    def clean_keyword(self) -> str:
        try:
            return blocklist.normalise(self.cleaned_data["keyword"])
        except blocklist.PatternError as exc:
            raise forms.ValidationError(str(exc)) from None


@admin.register(Filter)
class FilterAdmin(AuditedModelAdmin):
    form = FilterForm
    list_display = ("chat_id", "keyword", "media_kind", "updated_at")
    search_fields = ("=chat_id", "keyword", "text")


@admin.register(Report)
class ReportAdmin(admin.ModelAdmin):
    """Members' reports and the admins' decisions: read only (the bot writes them)."""

    list_display = (
        "reported_at",
        "chat_title",
        "target_name",
        "excerpt",
        "flag_count",
        "status",
        "decision",
        "decided_by_name",
    )
    list_filter = ("status", "decision")
    search_fields = ("=chat_id", "=target_id", "target_name", "chat_title")
    date_hierarchy = "reported_at"

    @admin.display(description=_("reported by"))
    def flag_count(self, report: Report) -> int:
        return report.flags.count()

    def has_add_permission(self, request: Any) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False


@admin.register(ReportSetting)
class ReportSettingAdmin(AuditedModelAdmin):
    list_display = ("chat_id", "enabled")
    list_filter = ("enabled",)
    search_fields = ("=chat_id",)


class BanListChatInline(admin.TabularInline):
    model = BanListChat
    extra = 0
    fields = ("chat_id", "chat_title", "added_by", "added_at")
    readonly_fields = ("added_at",)


@admin.register(BanList)
class BanListAdmin(AuditedModelAdmin):
    """Shared ban lists and their chats (the bot's /newfed, /joinfed, /leavefed)."""

    list_display = ("name", "owner_id", "created_at")
    search_fields = ("name", "=owner_id")
    inlines = (BanListChatInline,)


@admin.register(SharedBan)
class SharedBanAdmin(admin.ModelAdmin):
    """Who is banned in each list (/fban, /unfban in a chat of the list): read only, as each
    change is carried out chat by chat by the bot."""

    list_display = ("user_id", "name", "ban_list", "reason", "active", "changed_at")
    list_filter = ("active", "ban_list")
    search_fields = ("=user_id", "name", "reason")

    def has_add_permission(self, request: Any) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False
