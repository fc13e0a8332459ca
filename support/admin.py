"""Tickets in the admin site: a filtered, searchable list with average response and resolution
times, and a detail page with the conversation, the reply form, resolve and reopen."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.contrib import admin
from django.db.models import Count, Q, QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, path
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from support import assignees, files, selectors, views
from support.models import CannedReply, Ticket
from support.validation import parse_ticket_number
from telegram_bot.audit.admin import AuditedDeletesMixin, AuditedModelAdmin


class AgeFilter(admin.SimpleListFilter):
    title = gettext_lazy("age")
    parameter_name = "age"
    BANDS = {
        "day": (None, timedelta(days=1)),
        "week": (timedelta(days=1), timedelta(days=7)),
        "older": (timedelta(days=7), None),
    }

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [
            ("day", _("under a day")),
            ("week", _("1 to 7 days")),
            ("older", _("over 7 days")),
        ]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Ticket]) -> QuerySet[Ticket]:
        band = self.BANDS.get(self.value() or "")
        if band is None:
            return queryset
        now = timezone.now()
        younger_than, older_than = band[1], band[0]
        if younger_than is not None:
            queryset = queryset.filter(created_at__gt=now - younger_than)
        if older_than is not None:
            queryset = queryset.filter(created_at__lte=now - older_than)
        return queryset


class AssigneeFilter(admin.SimpleListFilter):
    title = gettext_lazy("assignee")
    parameter_name = "assignee"
    UNASSIGNED = "-"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        labels = Ticket.objects.exclude(assignee="").values_list("assignee", flat=True)
        names = assignees.assignee_names(labels)
        by_name = sorted(names.items(), key=lambda item: (item[1].lower(), item[0]))
        return [(self.UNASSIGNED, _("unassigned")), *by_name]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Ticket]) -> QuerySet[Ticket]:
        value = self.value()
        if value is None:
            return queryset
        return queryset.filter(assignee="" if value == self.UNASSIGNED else value)


class WaitingFilter(admin.SimpleListFilter):
    """Open tickets whose user waits for an answer, by how long."""

    title = gettext_lazy("waiting")
    parameter_name = "waiting"
    BANDS = {"any": timedelta(0), "hour": timedelta(hours=1), "day": timedelta(days=1)}

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [
            ("any", _("waiting for an answer")),
            ("hour", _("waiting over an hour")),
            ("day", _("waiting over a day")),
        ]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Ticket]) -> QuerySet[Ticket]:
        band = self.BANDS.get(self.value() or "")
        if band is None:
            return queryset
        return queryset.filter(status=Ticket.Status.OPEN, waiting_since__lte=timezone.now() - band)


@admin.register(CannedReply)
class CannedReplyAdmin(AuditedModelAdmin):
    """Saved answers: ``/canned <name>`` in a ticket's topic sends one."""

    list_display = ("name", "text", "updated_at")
    search_fields = ("name", "text")
    ordering = ("name",)


@admin.register(Ticket)
class TicketAdmin(AuditedDeletesMixin, admin.ModelAdmin):
    list_display = (
        "ticket_number",
        "user",
        "subject",
        "status",
        "created_at",
        "assignee_display",
        "priority",
        "waiting",
        "message_total",
        "first_response",
        "resolution",
        "rating",
    )
    list_display_links = ("ticket_number", "subject")
    list_filter = ("status", "priority", AssigneeFilter, WaitingFilter, AgeFilter, "rating")
    search_fields = ("user_name", "subject", "=user_id", "messages__text")
    search_help_text = gettext_lazy(
        "Ticket number (#12), user name or id, or text of the conversation."
    )
    ordering = ("-created_at", "-number")
    list_per_page = 50
    change_list_template = "support/ticket_change_list.html"

    def get_queryset(self, request: HttpRequest) -> QuerySet[Ticket]:
        tickets = super().get_queryset(request).annotate(message_count=Count("messages"))
        return assignees.with_assignee_names(tickets)

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Ticket], search_term: str
    ) -> tuple[QuerySet[Ticket], bool]:
        number = parse_ticket_number(search_term)
        if number is not None and search_term.strip().startswith("#"):
            return queryset.filter(number=number), False
        found, duplicates = super().get_search_results(request, queryset, search_term)
        if number is not None:
            found = queryset.filter(Q(pk__in=found.values("pk")) | Q(number=number))
        return found, duplicates

    @admin.display(description=gettext_lazy("ticket"), ordering="number")
    def ticket_number(self, obj: Ticket) -> str:
        return f"#{obj.number}"

    @admin.display(description=gettext_lazy("user"))
    def user(self, obj: Ticket) -> str:
        return f"{obj.user_name} ({obj.user_id})" if obj.user_name else str(obj.user_id)

    @admin.display(description=gettext_lazy("assignee"), ordering="assignee")
    def assignee_display(self, obj: Ticket) -> str:
        if not obj.assignee:
            return "—"
        return getattr(obj, "assignee_name", None) or assignees.assignee_name(obj.assignee)

    @admin.display(description=gettext_lazy("waiting"), ordering="waiting_since")
    def waiting(self, obj: Ticket) -> str:
        """How long the user has waited for an answer (— when nobody waits)."""
        if obj.waiting_since is None or not obj.is_open:
            return "—"
        return views.format_duration(timezone.now() - obj.waiting_since)

    @admin.display(description=gettext_lazy("messages"), ordering="message_count")
    def message_total(self, obj: Ticket) -> int:
        return int(getattr(obj, "message_count", 0))

    @admin.display(description=gettext_lazy("first response"))
    def first_response(self, obj: Ticket) -> str:
        return views.format_duration(obj.first_response_time)

    @admin.display(description=gettext_lazy("resolution"))
    def resolution(self, obj: Ticket) -> str:
        return views.format_duration(obj.resolution_time)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # tickets are opened by users in Telegram

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        response = super().changelist_view(request, extra_context)
        if isinstance(response, TemplateResponse) and response.context_data:
            changelist = response.context_data.get("cl")
            if changelist is not None:
                timings = selectors.average_timings(changelist.queryset)
                response.context_data["support_timings"] = {
                    "first_response": views.format_duration(timings.first_response),
                    "resolution": views.format_duration(timings.resolution),
                    "answered": timings.answered,
                    "resolved": timings.resolved,
                }
        return response

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        ticket = self._ticket(request, object_id)
        admin_context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "can_change": self.has_change_permission(request, ticket),
        }
        return views.ticket_detail(request, ticket, admin_context)

    def get_urls(self) -> list[URLPattern]:
        own = [
            path(
                "<path:object_id>/reply/",
                self._action(views.ticket_reply_view),
                name="support_ticket_reply",
            ),
            path(
                "<path:object_id>/resolve/",
                self._action(views.ticket_resolve_view),
                name="support_ticket_resolve",
            ),
            path(
                "<path:object_id>/reopen/",
                self._action(views.ticket_reopen_view),
                name="support_ticket_reopen",
            ),
            path(
                "<path:object_id>/entries/<int:entry_id>/retry/",
                self._action(views.entry_retry_view),
                name="support_ticket_retry",
            ),
            path(
                "<path:object_id>/entries/<int:entry_id>/file/",
                self._viewing(files.entry_file_view),
                name="support_ticket_entry_file",
            ),
        ]
        return own + super().get_urls()

    def _action(self, view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        def wrapped(request: HttpRequest, object_id: str, **kwargs: Any) -> HttpResponse:
            ticket = self._ticket(request, object_id)
            views.require_change(request, self.has_change_permission(request, ticket))
            return view(request, ticket, **kwargs)

        return self.admin_site.admin_view(wrapped)

    def _viewing(self, view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        """A page of a ticket that viewing it is enough for (``_ticket`` checks that)."""

        def wrapped(request: HttpRequest, object_id: str, **kwargs: Any) -> HttpResponse:
            return view(request, self._ticket(request, object_id), **kwargs)

        return self.admin_site.admin_view(wrapped)

    def _ticket(self, request: HttpRequest, object_id: str) -> Ticket:
        ticket = self.get_object(request, object_id)
        if ticket is None or not self.has_view_permission(request, ticket):
            raise Http404("no such ticket")
        return ticket
