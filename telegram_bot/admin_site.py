"""The operators' admin site: Django's admin plus operation pages registered by the apps.

Apps add pages with ``register_view`` from their ``admin.py``; each page is staff-only
(``admin_view``) and listed on the index under "Operations".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib import admin
from django.contrib.admin.apps import AdminConfig
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, URLResolver, path, reverse


@dataclass(frozen=True)
class OperationsView:
    route: str
    view: Callable[..., HttpResponse]
    name: str
    title: str


_views: list[OperationsView] = []


def register_view(route: str, view: Callable[..., HttpResponse], *, name: str, title: str) -> None:
    if any(existing.name == name for existing in _views):
        return
    _views.append(OperationsView(route, view, name, title))


class OperatorsAdminSite(admin.AdminSite):
    site_header = "Community bot administration"
    site_title = "Community bot"
    index_title = "Operations"

    def get_urls(self) -> list[URLResolver | URLPattern]:
        extra = [path(view.route, self.admin_view(view.view), name=view.name) for view in _views]
        return extra + super().get_urls()

    def each_context(self, request: HttpRequest) -> dict[str, Any]:
        from config.version import VERSION

        return {**super().each_context(request), "product_version": VERSION}

    def index(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> Any:
        links = [(view.title, reverse(f"admin:{view.name}")) for view in _views if view.title]
        return super().index(request, {**(extra_context or {}), "operations_links": links})


class OperatorsAdminConfig(AdminConfig):
    """Django's admin app with the operators' site as the default site."""

    default_site = "telegram_bot.admin_site.OperatorsAdminSite"
