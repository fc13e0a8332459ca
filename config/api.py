"""The JSON API at /api/v1/ (django-ninja), staff only, OpenAPI at /api/v1/docs.

Each feature app that has endpoints declares its ninja router in its AppConfig (``api_router``,
``telegram_bot.features``); they are mounted here under the app's label.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import NinjaAPI
from ninja.security import SessionAuth

from telegram_bot.features import api_routers


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
    for label, router in api_routers():
        api.add_router(f"/{label}/", router)
    return api


def _staff_only_docs() -> Any:
    from django.contrib.admin.views.decorators import staff_member_required

    return staff_member_required


api = build_api()
