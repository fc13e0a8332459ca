"""The JSON API at /api/v1/ (django-ninja), staff only, OpenAPI at /api/v1/docs.

Each feature app that has endpoints exposes ``router`` in its ``api.py``; they are mounted here
under the app's name, in ``settings.API_APPS`` order.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from django.conf import settings
from django.http import HttpRequest
from ninja import NinjaAPI
from ninja.security import SessionAuth


class StaffSessionAuth(SessionAuth):
    """The admin site's session, for staff users only (CSRF-checked on unsafe methods)."""

    def authenticate(self, request: HttpRequest, key: str | None) -> Any:
        user = super().authenticate(request, key)
        return user if user is not None and user.is_staff and user.is_active else None


def build_api() -> NinjaAPI:
    api = NinjaAPI(
        title="Community bot API",
        version="1",
        urls_namespace="api-v1",
        auth=StaffSessionAuth(),
        docs_decorator=_staff_only_docs(),
    )
    for app in settings.API_APPS:
        api.add_router(f"/{app}/", import_module(f"{app}.api").router)
    return api


def _staff_only_docs() -> Any:
    from django.contrib.admin.views.decorators import staff_member_required

    return staff_member_required


api = build_api()
