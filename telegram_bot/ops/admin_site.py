"""The operators' admin site: Django's admin plus operation pages registered by the apps.

Apps add pages with ``register_view`` from their ``admin.py``. Each page is staff-only
(``admin_view``) and names the permissions that open it (any one of them): the site checks
them before the view runs, so a page cannot be registered without a permission check, and
the start page and the sidebar list only the pages the user may open, grouped with the models
as an operator works (``telegram_bot.ops.navigation``). The index opens on the overview cards
the apps contribute (``telegram_bot.overview``).

A feature switched off (``FEATURES_DISABLED``, ``telegram_bot.features``) is left out of the
index and the navigation, and every page of it (its models' pages, its app
page, the operation pages its package registered) answers 404.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.apps import AdminConfig
from django.contrib.admin.options import IS_POPUP_VAR
from django.contrib.admin.views.main import ERROR_FLAG
from django.core.exceptions import ImproperlyConfigured, PermissionDenied
from django.db import DataError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import URLPattern, URLResolver, path, reverse
from django.utils.functional import Promise
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from telegram_bot import features
from telegram_bot.ops.navigation import grouped, view_entry
from telegram_bot.overview import overview_cards

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class OperationsView:
    route: str
    view: Callable[..., HttpResponse]
    name: str
    title: str | Promise
    permissions: tuple[str, ...]

    def allows(self, request: HttpRequest) -> bool:
        return any(request.user.has_perm(permission) for permission in self.permissions)


_views: list[OperationsView] = []


def register_view(
    route: str,
    view: Callable[..., HttpResponse],
    *,
    name: str,
    title: str | Promise,
    permissions: tuple[str, ...],
) -> None:
    """Add a page at ``/admin/<route>`` for staff users holding any one of ``permissions``
    (``app_label.codename``)."""
    if not permissions or not all("." in permission for permission in permissions):
        raise ImproperlyConfigured(
            f"admin view {name!r}: permissions must name at least one 'app_label.codename'"
        )
    if any(existing.name == name for existing in _views):
        return
    _views.append(OperationsView(route, view, name, title, tuple(permissions)))


def registered_views() -> list[OperationsView]:
    return list(_views)


def _permission_required(entry: OperationsView) -> Callable[..., HttpResponse]:
    @wraps(entry.view)
    def check(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not entry.allows(request):
            raise PermissionDenied
        return entry.view(request, *args, **kwargs)

    return check


class ReadOnlyAdminMixin:
    """A model admin that shows and never writes: no add, change or delete, for anyone (a
    superuser too). Before the ModelAdmin in the bases."""

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class OperatorsAdminSite(admin.AdminSite):
    site_header = gettext_lazy("Community bot administration")
    site_title = gettext_lazy("Community bot")
    index_title = gettext_lazy("Overview")

    def get_urls(self) -> list[URLResolver | URLPattern]:
        extra = [
            path(view.route, self.admin_view(_permission_required(view)), name=view.name)
            for view in _views
        ]
        return extra + super().get_urls()

    def admin_view(self, view: Callable[..., Any], cacheable: bool = False) -> Any:
        checked = super().admin_view(view, cacheable)
        name = getattr(view, "__name__", "")
        if name == "changelist_view":
            checked = _lookups_checked(checked)
        elif name in ("change_view", "history_view", "delete_view"):
            checked = _object_id_checked(checked)
        label = _owner_label(view)
        return _feature_enabled(checked, label) if label is not None else checked

    def get_app_list(self, request: HttpRequest, app_label: str | None = None) -> list[Any]:
        """One app's page lists that app's models; the start page and the sidebar list the
        operator's sections (``telegram_bot.ops.navigation``), pages included."""
        apps = [
            app
            for app in super().get_app_list(request, app_label)
            if features.is_enabled(app["app_label"])
        ]
        if app_label is not None:
            return apps
        views = {
            view.name: view_entry(view.name, view.title, reverse(f"admin:{view.name}"))
            for view in _views
            if view.title and view.allows(request) and _enabled(view.view)
        }
        return grouped(apps, views)

    def app_index(
        self, request: HttpRequest, app_label: str, extra_context: dict[str, Any] | None = None
    ) -> Any:
        if not features.is_enabled(app_label):
            raise Http404("no such app")
        return super().app_index(request, app_label, extra_context)

    def password_change(self, request: HttpRequest, extra_context: Any = None) -> Any:
        """The site's own "Change password" page, audited as the Users page's is (a session
        taken over must not change the password unrecorded)."""
        response = super().password_change(request, extra_context)
        if request.method == "POST" and response.status_code == 302:
            from telegram_bot.audit import audit_record
            from telegram_bot.audit.admin import admin_actor

            user = request.user
            audit_record(
                action="user.change",
                actor=admin_actor(request),
                source="admin",
                target_name=f"user #{user.pk}: {user.get_username()}",
                detail="password (their own, on the change password page)",
            )
        return response

    def each_context(self, request: HttpRequest) -> dict[str, Any]:
        from config.version import VERSION

        return {**super().each_context(request), "product_version": VERSION}

    def index(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> Any:
        context = {"overview_cards": overview_cards(request.user)}
        return super().index(request, {**(extra_context or {}), **context})


def _owner_label(view: Callable[..., Any]) -> str | None:
    """The app a page belongs to: its model's for a model admin's page, else the app whose
    package defines the view."""
    model = getattr(getattr(view, "__self__", None), "model", None)
    if model is not None:
        return str(model._meta.app_label)
    return features.owner_label(getattr(view, "__module__", None) or "")


def _enabled(view: Callable[..., Any]) -> bool:
    label = _owner_label(view)
    return label is None or features.is_enabled(label)


def _feature_enabled(view: Callable[..., Any], label: str) -> Callable[..., Any]:
    """A page of a feature switched off answers 404 (checked per request, so the switch needs
    no new URL patterns)."""

    @wraps(view)
    def checked(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        if not features.is_enabled(label):
            raise Http404("this feature is switched off")
        return view(request, *args, **kwargs)

    return checked


def _lookups_checked(view: Callable[..., Any]) -> Callable[..., Any]:
    """A list's filters come from the query string, and Django checks their names, not every
    value: ``?created_at__year=10000`` fails only when the count runs (ValueError), a NUL in a
    value only in PostgreSQL (DataError). Either is a bad link, not a server error: the whole
    list is shown, with a message that says so."""

    @wraps(view)
    def checked(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        try:
            return view(request, *args, **kwargs)
        except (ValueError, OverflowError, DataError) as exc:
            if not set(request.GET) - {IS_POPUP_VAR, ERROR_FLAG}:
                raise  # not the query string's doing
            log.warning("admin list %s refused its query string: %s", request.path, exc)
            messages.error(request, _("That filter is not valid here; the whole list is shown."))
            return HttpResponseRedirect(request.path)

    return checked


def _object_id_checked(view: Callable[..., Any]) -> Callable[..., Any]:
    """An object's id comes from the URL: a NUL, which PostgreSQL refuses for a text key,
    fails in the database, not in Django's own check of the id. A link to nothing: 404, not a
    server error."""

    @wraps(view)
    def checked(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        if "\x00" in str(kwargs.get("object_id", "")):
            raise Http404("no such object")
        return view(request, *args, **kwargs)

    return checked


class OperatorsAdminConfig(AdminConfig):
    """Django's admin app with the operators' site as the default site."""

    default_site = "telegram_bot.ops.admin_site.OperatorsAdminSite"
