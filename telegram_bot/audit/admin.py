"""The audit log in the admin site: a read-only list with filters and search, and a CSV
export that needs its own permission (``telegram_bot.export_auditentry``). Also the helpers
that record admin-site actions of every app in one line: ``audited_action`` for an action on a
queryset, ``AuditedModelAdmin`` for saves and deletions, ``admin_actor`` for the rest."""

from __future__ import annotations

import csv
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib import admin
from django.db.models import Model, Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.functional import Promise
from django.utils.html import format_html
from django.utils.translation import gettext, gettext_lazy

from telegram_bot import features
from telegram_bot.audit import BOT, Actor, audit_step
from telegram_bot.ids import is_person
from telegram_bot.models import AuditEntry
from telegram_bot.numbers import ascii_int
from telegram_bot.ops.admin_site import ReadOnlyAdminMixin, registered_views
from telegram_bot.privacy import pseudonym

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
    "cause",
)
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# Spreadsheet programs read a CSV without a byte-order mark in the system's code page, which
# garbles Cyrillic (and any non-Latin) names.
BOM = "\ufeff"


@admin.register(AuditEntry)
class AuditEntryAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("created_at", "what", "chat", "reason", "outcome")
    list_filter = ("action", "outcome", "source", ("created_at", admin.DateFieldListFilter))
    search_fields = ("actor_name", "target_name", "reason", "detail")
    date_hierarchy = "created_at"
    actions = ("export_csv",)
    list_per_page = 100

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> Any:
        """The page's chats named by their titles, looked up once for the page."""
        response = super().changelist_view(request, extra_context)
        changelist = getattr(response, "context_data", {}).get("cl")
        if changelist is not None:
            entries = list(changelist.result_list)
            titles = features.chat_titles(entry.chat_id for entry in entries)
            member_page = _member_page(request)
            for entry in entries:
                entry.chat_title = titles.get(entry.chat_id, "")
                entry.member_url = ""
                if member_page and entry.chat_id is not None and is_person(entry.target_id):
                    entry.member_url = reverse(
                        f"admin:{member_page}", args=[entry.chat_id, entry.target_id]
                    )
        return response

    @admin.display(description=gettext_lazy("what happened"))
    def what(self, entry: AuditEntry) -> str:
        """The sentence, its target a link to the member's page (when there is one and the
        user may open it)."""
        text = sentence(entry, phrases())
        url = getattr(entry, "member_url", "")
        target = _who(entry.target_id, entry.target_name)
        if not url or not target or target not in text:
            return text
        before, _, after = text.partition(target)
        return format_html(
            '{}<a href="{}" class="member-link">{}</a>{}', before, url, target, after
        )

    @admin.display(description=gettext_lazy("chat"), ordering="chat_id")
    def chat(self, entry: AuditEntry) -> str:
        if entry.chat_id is None:
            return "-"
        title = entry.chat_title
        if not title:
            return str(entry.chat_id)
        return format_html('{}<br><span class="quiet">{}</span>', title, entry.chat_id)

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[AuditEntry], search_term: str
    ) -> tuple[QuerySet[AuditEntry], bool]:
        """Text search, plus exact ids: a number finds its actor, chat, target or update, and
        a person's Telegram id also the actions kept under their pseudonym after an erasure
        (docs/privacy.md: erased admins and moderators stay accountable)."""
        results, distinct = super().get_search_results(request, queryset, search_term)
        term = search_term.strip()
        number = ascii_int(term, signed=True)  # an id: one optional minus, in 64 bits
        if number is not None:
            actors = [number, pseudonym(number)] if is_person(number) else [number]
            results |= queryset.filter(
                Q(actor_id__in=actors)
                | Q(chat_id=number)
                | Q(target_id=number)
                | Q(update_id=number)
            )
        return results, distinct

    def has_export_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.has_perm("telegram_bot.export_auditentry"))

    @admin.action(
        description=gettext_lazy("Export selected entries as CSV"), permissions=["export"]
    )
    def export_csv(self, request: HttpRequest, queryset: QuerySet[AuditEntry]) -> HttpResponse:
        response = HttpResponse(content_type="text/csv; charset=utf-8")
        stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
        response["Content-Disposition"] = f'attachment; filename="audit-{stamp}.csv"'
        response.write(BOM)
        writer = csv.writer(response)
        writer.writerow(CSV_COLUMNS)
        for row in queryset.order_by("created_at", "id").values_list(*CSV_COLUMNS):
            writer.writerow([csv_cell(value) for value in row])
        return response


def _member_page(request: HttpRequest) -> str | None:
    """The member page's name when ``request``'s user may open it."""
    name = features.member_page_name()
    page = next((view for view in registered_views() if view.name == name), None)
    return name if page is not None and page.allows(request) else None


def csv_cell(value: Any) -> str:
    """A CSV cell that a spreadsheet will not run as a formula (names and reasons come from
    Telegram users)."""
    if value is None:
        return ""
    text = value.isoformat() if hasattr(value, "isoformat") else str(value)
    if isinstance(value, str) and text.startswith(_FORMULA_STARTS):
        return "'" + text
    return text


# -- the log's entries as sentences ----------------------------------------------------------

# The core's own actions; a feature's come from its AppConfig's ``audit_phrases``.
CORE_PHRASES: dict[str, str | Promise] = {
    "admin.add": gettext_lazy("{actor} made {target} a bot admin"),
    "admin.remove": gettext_lazy("{actor} removed {target} from the bot admins"),
    "user.change": gettext_lazy("{actor} changed the console account {target}"),
    "privacy_export": gettext_lazy("{actor} exported the personal data of {target}"),
    "privacy_erase": gettext_lazy("{actor} erased the personal data of {target}"),
    "job.retry": gettext_lazy("{actor} ran again {target}"),
    "job.cancel": gettext_lazy("{actor} cancelled {target}"),
    "task.resubmit": gettext_lazy("{actor} resubmitted {target}"),
}
# Saves and deletions in the console (``<model>.add`` ...: ``AuditedModelAdmin``).
SUFFIX_PHRASES: dict[str, str | Promise] = {
    ".add": gettext_lazy("{actor} added {target}"),
    ".change": gettext_lazy("{actor} changed {target}"),
    ".delete": gettext_lazy("{actor} deleted {target}"),
}


def phrases() -> dict[str, str | Promise]:
    return {**CORE_PHRASES, **features.audit_phrases()}


def sentence(entry: AuditEntry, known: dict[str, str | Promise]) -> str:
    """``Anna muted Bob for 1h``: who did what to whom, the detail where the phrase puts it
    (or after it), and how it ended when it did not go through."""
    template = known.get(entry.action)
    if template is None:
        suffix = "." + entry.action.rpartition(".")[2]
        template = SUFFIX_PHRASES.get(suffix, gettext_lazy("{actor}: {action} {target}"))
    done = entry.outcome == AuditEntry.Outcome.DONE
    text = str(template).format(
        actor=_who(entry.actor_id, entry.actor_name) or gettext("someone"),
        target=_who(entry.target_id, entry.target_name),
        detail=entry.detail if done else "",
        action=entry.action,
    )
    text = " ".join(text.split())
    if done and entry.detail and "{detail}" not in str(template):
        text = f"{text} ({entry.detail})"
    if not done:
        ending = entry.get_outcome_display()
        text = f"{text}: {ending}" + (f", {entry.detail}" if entry.detail else "")
    return text


def _who(telegram_id: int | None, name: str) -> str:
    """A person by name (a console user by login, the bot as itself); the id when no name."""
    if name.startswith("admin:"):
        return name.removeprefix("admin:")
    if name == BOT.name and telegram_id is None:
        return gettext("the bot")
    if name:
        return name
    return f"#{telegram_id}" if telegram_id is not None else ""


# -- recording the admin-site actions of every app --------------------------------------------


def admin_actor(request: HttpRequest) -> Actor:
    """The admin-site user of ``request``."""
    return Actor(None, f"admin:{request.user.get_username()}")


AdminAction = Callable[[Any, HttpRequest, QuerySet[Any]], Any]


def audited_action(action: str) -> Callable[[AdminAction], AdminAction]:
    """Record an admin-site action on a queryset (a method or a plain action function): one
    entry naming the selected objects; failed when the action raises. Put it under
    ``@admin.action``."""

    def wrap(function: AdminAction) -> AdminAction:
        @wraps(function)
        def run(model_admin: Any, request: HttpRequest, queryset: QuerySet[Any]) -> Any:
            with audit_step(
                action,
                actor=admin_actor(request),
                source="admin",
                target_name=selection(queryset),
            ):
                return function(model_admin, request, queryset)

        return run

    return wrap


def selection(queryset: QuerySet[Any], limit: int = 20) -> str:
    """``job #3, #7 (2)``: the objects an action was asked to act on."""
    ids = list(queryset.values_list("pk", flat=True)[: limit + 1])
    count = len(ids) if len(ids) <= limit else queryset.count()
    shown = ", #".join(str(pk) for pk in ids[:limit])
    more = ", ..." if count > limit else ""
    name = _stored_name(queryset.model)
    return f"{name} #{shown}{more} ({count})" if ids else "nothing"


class AuditedDeletesMixin:
    """Deletions in the admin site recorded as ``<model>.delete`` (with the object's name and
    chat): for a model admin whose saves are audited its own way, or never made by hand."""

    opts: Any

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        with audit_step(
            f"{self.opts.model_name}.delete",
            actor=admin_actor(request),
            source="admin",
            chat_id=getattr(obj, "chat_id", None),
            target_name=_name(obj),
        ):
            super().delete_model(request, obj)  # type: ignore[misc]

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        with audit_step(
            f"{self.opts.model_name}.delete",
            actor=admin_actor(request),
            source="admin",
            target_name=selection(queryset),
        ):
            super().delete_queryset(request, queryset)  # type: ignore[misc]


class AuditedModelAdmin(AuditedDeletesMixin, admin.ModelAdmin):
    """A model admin whose saves and deletions are recorded (``<model>.add``, ``.change``,
    ``.delete``), with the changed fields; the chat is the object's ``chat_id`` if it has one."""

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        changed = ", ".join(
            f"{name}={_shown(form.cleaned_data.get(name))}" for name in form.changed_data
        )
        with audit_step(
            f"{self.opts.model_name}.{'change' if change else 'add'}",
            actor=admin_actor(request),
            source="admin",
            chat_id=getattr(obj, "chat_id", None),
            detail=changed or "no change",
        ) as step:
            super().save_model(request, obj, form, change)
            step.fields["target_name"] = _name(obj)


def _name(obj: Model) -> str:
    with translation.override(None):
        return f"{_stored_name(type(obj))} #{obj.pk}: {obj}"


def _stored_name(model: type[Model]) -> str:
    """The model's name as the audit log stores it: in English (the source language), whatever
    the operator's language, like the rest of the log's texts."""
    with translation.override(None):
        return str(model._meta.verbose_name)


def _shown(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."
