"""The operators' admin site: Django's admin plus operation pages registered by the apps.

Apps add pages with ``register_view`` from their ``admin.py``. Each page is staff-only
(``admin_view``) and names the permissions that open it (any one of them): the site checks
them before the view runs, so a page cannot be registered without a permission check, and
the index lists under "Operations" only the pages the user may open. The index opens on the
overview cards the apps contribute (``telegram_bot.overview``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import Any

from django.contrib import admin
from django.contrib.admin.apps import AdminConfig
from django.core.exceptions import ImproperlyConfigured, PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, URLResolver, path, reverse
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy

from telegram_bot.overview import overview_cards


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

    def each_context(self, request: HttpRequest) -> dict[str, Any]:
        from config.version import VERSION

        return {**super().each_context(request), "product_version": VERSION}

    def index(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> Any:
        links = [
            (view.title, reverse(f"admin:{view.name}"))
            for view in _views
            if view.title and view.allows(request)
        ]
        context = {"operations_links": links, "overview_cards": overview_cards(request.user)}
        return super().index(request, {**(extra_context or {}), **context})


class OperatorsAdminConfig(AdminConfig):
    """Django's admin app with the operators' site as the default site."""

    default_site = "telegram_bot.ops.admin_site.OperatorsAdminSite"
