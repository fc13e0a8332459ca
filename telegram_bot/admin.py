"""Admin site: bot admins (with lockout protection), delivery failures, blocked chats, and the
dead-letter pages."""

from __future__ import annotations

from typing import Any

from axes.models import AccessAttempt, AccessFailureLog, AccessLog
from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group, User
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext
from django_q import admin as django_q_admin
from django_q.models import Failure, OrmQ, Schedule, Success
from unfold.admin import ModelAdmin
from unfold.forms import AdminPasswordChangeForm, UserChangeForm, UserCreationForm

from telegram_bot import admins, ids
from telegram_bot.audit import audit_record, audit_step
from telegram_bot.audit.admin import (
    AuditedDeletesMixin,
    AuditedModelAdmin,
    admin_actor,
    audited_action,
)
from telegram_bot.errors import BotError
from telegram_bot.jobs.registry import rerun_refusal
from telegram_bot.jobs.services import job_cancel, job_retry_now
from telegram_bot.models import BlockedChat, BotAdmin, ChatPreference, DeliveryFailure, Job
from telegram_bot.ops.admin_site import ReadOnlyAdminMixin, register_view
from telegram_bot.ops.dead_letter_views import (
    dead_letter_drop,
    dead_letter_list,
    dead_letter_replay,
)
from telegram_bot.ops.names import chat_column, chat_formfield, name_page
from telegram_bot.privacy.views import (
    ERASE_PERMISSION,
    EXPORT_PERMISSION,
    privacy_erase,
    privacy_export,
)
from telegram_bot.redaction import redact

_DEAD_LETTERS = ("telegram_bot.manage_dead_letters",)
register_view(
    "dead-letters/",
    dead_letter_list,
    name="dead-letters",
    title=gettext_lazy("Dead letters"),
    permissions=_DEAD_LETTERS,
)
register_view(
    "dead-letters/<int:update_id>/replay/",
    dead_letter_replay,
    name="dead-letter-replay",
    title="",
    permissions=_DEAD_LETTERS,
)
register_view(
    "dead-letters/<int:update_id>/drop/",
    dead_letter_drop,
    name="dead-letter-drop",
    title="",
    permissions=_DEAD_LETTERS,
)

register_view(
    "privacy/export/",
    privacy_export,
    name="privacy-export",
    title=gettext_lazy("Export personal data"),
    permissions=(EXPORT_PERMISSION,),
)
register_view(
    "privacy/erase/",
    privacy_erase,
    name="privacy-erase",
    title=gettext_lazy("Erase personal data"),
    permissions=(ERASE_PERMISSION,),
)


class BotAdminForm(forms.ModelForm):
    class Meta:
        model = BotAdmin
        fields = ("telegram_id", "display_name")

    def clean_telegram_id(self) -> int:
        telegram_id: int = self.cleaned_data["telegram_id"]
        try:
            return ids.check_person(telegram_id)  # in range, and not a stand-in account
        except ids.IdError as exc:
            raise forms.ValidationError(str(exc.user_message)) from None


@admin.register(BotAdmin)
class BotAdminAdmin(ModelAdmin):
    form = BotAdminForm
    list_display = ("telegram_id", "display_name", "added_by", "created_at")
    search_fields = ("telegram_id", "display_name")
    fields = ("telegram_id", "display_name")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        # Changing a row's Telegram id would make another account an admin without the add
        # permission and without its audit entry: a new admin is added, an old one removed.
        return ("telegram_id",) if obj is not None else ()

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if obj is not None and not self._removable(obj):
            return False
        return super().has_delete_permission(request, obj)

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> Any:
        extra = {
            "subtitle": _(
                "The owner and ADMIN_TELEGRAM_IDS are admins too (from the environment): %(ids)s"
            )
            % {"ids": sorted(admins.configured_admin_ids()) or _("none")}
        }
        return super().changelist_view(request, {**(extra_context or {}), **extra})

    def save_model(self, request: HttpRequest, obj: BotAdmin, form: Any, change: bool) -> None:
        if change:  # the display name: what answers are signed with
            with audit_step(
                "admin.change",
                actor=admin_actor(request),
                source="admin",
                target_id=obj.telegram_id,
                detail=", ".join(form.changed_data) or "no change",
            ):
                super().save_model(request, obj, form, change)
            return
        with audit_step(
            "admin.add", actor=admin_actor(request), source="admin", target_id=obj.telegram_id
        ):
            added = admins.admin_add(
                telegram_id=obj.telegram_id, added_by=None, display_name=obj.display_name
            )
        # The site's history entry and its "added" message link to the row by this key.
        obj.pk = added.pk

    def delete_model(self, request: HttpRequest, obj: BotAdmin) -> None:
        self.delete_queryset(request, BotAdmin.objects.filter(pk=obj.pk))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[BotAdmin]) -> None:
        for telegram_id in queryset.values_list("telegram_id", flat=True):
            try:
                with audit_step(
                    "admin.remove",
                    actor=admin_actor(request),
                    source="admin",
                    target_id=telegram_id,
                ):
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
class DeliveryFailureAdmin(AuditedDeletesMixin, ModelAdmin):
    list_display = ("created_at", chat_column(), "purpose", "error_class", "error")
    list_filter = ("purpose", "error_class")
    search_fields = ("chat_id",)
    fields = readonly_fields = ("chat_id", "purpose", "error_class", "error", "created_at")

    @admin.display(description=gettext_lazy("description"))
    def error(self, obj: DeliveryFailure) -> str:
        # Stored texts are redacted when written; redact again in case one slipped through.
        return redact(obj.description)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> Any:
        return name_page(super().changelist_view(request, extra_context))


@admin.register(BlockedChat)
class BlockedChatAdmin(AuditedDeletesMixin, ModelAdmin):
    list_display = (chat_column(), "reason", "blocked_at")
    search_fields = ("chat_id",)
    readonly_fields = ("chat_id", "reason", "blocked_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> Any:
        return name_page(super().changelist_view(request, extra_context))


@admin.register(ChatPreference)
class ChatPreferenceAdmin(AuditedModelAdmin):
    list_display = (chat_column(), "time_zone", "language")
    search_fields = ("chat_id",)

    def formfield_for_dbfield(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if db_field.name == "chat_id":
            return chat_formfield(db_field)
        return super().formfield_for_dbfield(db_field, request, **kwargs)

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> Any:
        return name_page(super().changelist_view(request, extra_context))

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        # The chat id is the row's key: changed on a row, the save writes another chat's row
        # (its zone and language replaced, or a second row made) and leaves this one as it was.
        return ("chat_id",) if obj is not None else ()


@admin.register(Job)
class JobAdmin(AuditedDeletesMixin, ModelAdmin):
    list_display = (
        "id",
        "kind",
        "status",
        "attempts_display",
        "next_attempt",
        "lease_owner",
        "lease_expires_at",
        "error_summary",
        "created_at",
        "finished_at",
    )
    list_filter = ("status", "kind")
    search_fields = ("kind", "dedupe_key", "last_error")
    readonly_fields = (
        "kind",
        "payload",
        "status",
        "attempts",
        "max_retries",
        "next_attempt",
        "last_error_redacted",
        "lease_owner",
        "lease_expires_at",
        "dedupe_key",
        "created_at",
        "started_at",
        "finished_at",
    )
    fields = readonly_fields
    actions = ("retry_now", "cancel")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description=gettext_lazy("attempts"))
    def attempts_display(self, obj: Job) -> str:
        return f"{obj.attempts} / {obj.max_retries + 1}"

    @admin.display(description=gettext_lazy("last error"))
    def error_summary(self, obj: Job) -> str:
        return redact(obj.last_error)[:120]

    @admin.display(description=gettext_lazy("last error"))
    def last_error_redacted(self, obj: Job) -> str:
        return redact(obj.last_error)

    def has_operate_permission(self, request: HttpRequest) -> bool:
        """For "Run again now" and "Cancel" (``telegram_bot.operate_job``): viewing the jobs
        is not enough to act on them."""
        return request.user.has_perm(f"{self.opts.app_label}.operate_job")

    @admin.action(description=gettext_lazy("Run again now"), permissions=["operate"])
    @audited_action("job.retry")
    def retry_now(self, request: HttpRequest, queryset: QuerySet[Job]) -> None:
        done = 0
        for pk, kind, payload in queryset.values_list("pk", "kind", "payload"):
            refusal = rerun_refusal(kind, payload if isinstance(payload, dict) else {})
            if refusal:  # it would do nothing while saying "succeeded"
                messages.warning(
                    request,
                    _("Job #%(id)s not run again: %(why)s.") % {"id": pk, "why": refusal},
                )
                continue
            done += job_retry_now(job_id=pk)
        messages.info(
            request,
            ngettext("%(count)d job queued to run now.", "%(count)d jobs queued to run now.", done)
            % {"count": done},
        )

    @admin.action(
        description=gettext_lazy("Cancel (jobs that have not started)"), permissions=["operate"]
    )
    @audited_action("job.cancel")
    def cancel(self, request: HttpRequest, queryset: QuerySet[Job]) -> None:
        done = sum(job_cancel(job_id=pk) for pk in queryset.values_list("pk", flat=True))
        messages.info(
            request,
            ngettext("%(count)d job cancelled.", "%(count)d jobs cancelled.", done)
            % {"count": done},
        )


# django-q2's task lists offer "Resubmit selected tasks to queue" to anyone who may view them.
# Running a task again is an operation: it needs the change permission of the list.
@admin.action(description=gettext_lazy("Resubmit selected tasks to queue"), permissions=["change"])
@audited_action("task.resubmit")
def resubmit_tasks(model_admin: Any, request: HttpRequest, queryset: QuerySet[Any]) -> None:
    django_q_admin.resubmit_task(model_admin, request, queryset)


class SuccessAdmin(django_q_admin.TaskAdmin, ModelAdmin):
    actions = [resubmit_tasks]


class FailureAdmin(django_q_admin.FailAdmin, ModelAdmin):
    actions = [resubmit_tasks]


class ScheduleAdmin(ReadOnlyAdminMixin, django_q_admin.ScheduleAdmin, ModelAdmin):
    """django-q2's schedules, shown and never edited. A schedule names the function the worker
    imports and runs by its dotted path, so whoever may add or change one runs any code in the
    worker (the database, the bot's token). The apps declare their schedules in code and
    ``sync_schedules`` writes them; nobody, a superuser neither, writes them here."""


class QueueAdmin(django_q_admin.QueueAdmin, ModelAdmin):
    """django-q2's queue of the database broker, in the console's skin as its other lists."""


for _model, _model_admin in (
    (Success, SuccessAdmin),
    (Failure, FailureAdmin),
    (Schedule, ScheduleAdmin),
):
    if admin.site.is_registered(_model):
        admin.site.unregister(_model)
    admin.site.register(_model, _model_admin)
if admin.site.is_registered(OrmQ):  # django-q2 registers it for the database broker only
    admin.site.unregister(OrmQ)
    admin.site.register(OrmQ, QueueAdmin)


# django-axes' login attempts and logs, registered here (AXES_ENABLE_ADMIN = False, as axes
# documents for a site that registers its own): axes' own attempts page offered "Clean up
# expired attempts" to anyone who may view the attempts, and the action deletes rows.
_AXES_READ_ONLY = ["user_agent", "ip_address", "username", "http_accept", "path_info"]


@admin.register(AccessAttempt)
class AccessAttemptAdmin(ModelAdmin):
    list_display = [
        "attempt_time",
        "ip_address",
        "user_agent",
        "username",
        "path_info",
        "failures_since_start",
    ]
    list_filter = ["attempt_time", "path_info"]
    search_fields = ["ip_address", "username", "user_agent", "path_info"]
    date_hierarchy = "attempt_time"
    readonly_fields = [
        *_AXES_READ_ONLY,
        "attempt_time",
        "get_data",
        "post_data",
        "failures_since_start",
    ]
    actions = ["cleanup_expired_attempts"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # axes writes them, on failed logins

    @admin.action(description=gettext_lazy("Clean up expired attempts"), permissions=["delete"])
    @audited_action("login_attempts.cleanup")
    def cleanup_expired_attempts(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        """The attempts older than the cool-off (AXES_COOLOFF_TIME): they lock nobody out."""
        cooloff = settings.AXES_COOLOFF_TIME
        count = 0
        if cooloff is not None:
            cutoff = timezone.now() - cooloff
            count, _rows = AccessAttempt.objects.filter(attempt_time__lte=cutoff).delete()
        messages.info(
            request,
            ngettext(
                "%(count)d expired attempt cleaned up.",
                "%(count)d expired attempts cleaned up.",
                count,
            )
            % {"count": count},
        )


@admin.register(AccessLog)
class AccessLogAdmin(ModelAdmin):
    list_display = ["attempt_time", "logout_time", "ip_address", "username", "user_agent"]
    list_filter = ["attempt_time", "logout_time", "path_info"]
    search_fields = ["ip_address", "user_agent", "username", "path_info"]
    date_hierarchy = "attempt_time"
    readonly_fields = [*_AXES_READ_ONLY, "attempt_time", "logout_time"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(AccessFailureLog)
class AccessFailureLogAdmin(ModelAdmin):
    list_display = ["attempt_time", "ip_address", "username", "user_agent", "locked_out"]
    list_filter = ["attempt_time", "locked_out", "path_info"]
    search_fields = ["ip_address", "user_agent", "username", "path_info"]
    date_hierarchy = "attempt_time"
    readonly_fields = [*_AXES_READ_ONLY, "attempt_time", "locked_out"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


class AuditedAuthMixin:
    """Who may do what in this site is recorded in the audit log (``user.add``, ``.change``,
    ``.delete``, ``group.*``): the fields changed, and for an account its staff, superuser and
    active flags, groups and permissions as they are after the change. Never a password:
    Django's history message names the changed fields only (a new password is "password")."""

    opts: Any

    def log_addition(self, request: HttpRequest, obj: Any, message: Any) -> Any:
        self._audit(request, obj, "add", message)
        return super().log_addition(request, obj, message)  # type: ignore[misc]

    def log_change(self, request: HttpRequest, obj: Any, message: Any) -> Any:
        self._audit(request, obj, "change", message)
        return super().log_change(request, obj, message)  # type: ignore[misc]

    def log_deletions(self, request: HttpRequest, queryset: QuerySet[Any]) -> Any:
        for obj in queryset:
            self._audit(request, obj, "delete", [])
        return super().log_deletions(request, queryset)  # type: ignore[misc]

    def _audit(self, request: HttpRequest, obj: Any, verb: str, message: Any) -> None:
        fields = [
            str(field)
            for part in (message if isinstance(message, list) else [])
            for change in part.values()
            if isinstance(change, dict)
            for field in change.get("fields", [])
        ]
        audit_record(
            action=f"{self.opts.model_name}.{verb}",
            actor=admin_actor(request),
            source="admin",
            target_name=f"{self.opts.model_name} #{obj.pk}: {obj}",
            detail="; ".join(part for part in (", ".join(fields), _rights(obj)) if part),
        )


def _rights(obj: Any) -> str:
    """An account's or a group's rights as they are now (codenames, group names)."""
    if isinstance(obj, User):
        codenames = ",".join(sorted(p.codename for p in obj.user_permissions.all()))
        groups = ",".join(sorted(g.name for g in obj.groups.all()))
        return (
            f"staff={obj.is_staff} superuser={obj.is_superuser} active={obj.is_active} "
            f"groups=[{groups}] permissions=[{codenames}]"
        )
    if isinstance(obj, Group):
        return "permissions=[{}]".format(
            ",".join(sorted(p.codename for p in obj.permissions.all()))
        )
    return ""


class AuditedUserAdmin(AuditedAuthMixin, UserAdmin, ModelAdmin):
    """Django's user admin in unfold's skin: its forms, as unfold documents for the auth admin."""

    form = UserChangeForm
    add_form = UserCreationForm
    change_password_form = AdminPasswordChangeForm


class AuditedGroupAdmin(AuditedAuthMixin, GroupAdmin, ModelAdmin):
    pass


for _auth_model, _auth_admin in (
    (User, AuditedUserAdmin),
    (Group, AuditedGroupAdmin),
):
    if admin.site.is_registered(_auth_model):
        admin.site.unregister(_auth_model)
    admin.site.register(_auth_model, _auth_admin)
