"""The JSON API at /api/v1/ (django-ninja), staff only, OpenAPI at /api/v1/docs.

Each feature app that has endpoints names its API module in its AppConfig (``api_module``,
``telegram_bot.features``); the module exposes ``router`` and ``PERMISSION`` (``app.codename``).
The router is mounted under the app's label, behind the admin session of a staff user who holds
that permission (401 without a staff session, 403 without the permission). An API module
without ``PERMISSION`` stops the start. A feature switched off (``FEATURES_DISABLED``) is not
mounted: its routes answer 404 and the OpenAPI schema leaves them out.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest, HttpResponse
from django.utils.cache import add_never_cache_headers
from ninja import NinjaAPI
from ninja.errors import HttpError
from ninja.security import SessionAuth

from telegram_bot.features import api_modules


class StaffSessionAuth(SessionAuth):
    """The admin site's session, for staff users only (CSRF-checked on unsafe methods), and
    with ``permission`` for users who hold it."""

    def __init__(self, permission: str | None = None) -> None:
        super().__init__()
        self.permission = permission

    def authenticate(self, request: HttpRequest, key: str | None) -> Any:
        user = super().authenticate(request, key)
        if user is None or not (user.is_staff and user.is_active):
            return None
        if self.permission is not None and not user.has_perm(self.permission):
            raise HttpError(403, "You do not have permission to use this endpoint.")
        return user


class StaffAPI(NinjaAPI):
    """Every answer is the staff's own view of personal data (members' names, usernames, last
    seen): never stored by a browser or a proxy, as the admin site's pages are not."""

    def create_response(
        self,
        request: HttpRequest,
        data: Any,
        *,
        status: int | None = None,
        temporal_response: HttpResponse | None = None,
    ) -> HttpResponse:
        response = super().create_response(
            request, data, status=status, temporal_response=temporal_response
        )
        add_never_cache_headers(response)  # no-cache, no-store, must-revalidate, private
        return response


def build_api() -> NinjaAPI:
    api = StaffAPI(
        title="Community bot API",
        version="1",
        urls_namespace="api-v1",
        auth=StaffSessionAuth(),
        docs_decorator=_staff_only_docs(),
    )
    for label, module in api_modules():
        permission = getattr(module, "PERMISSION", None)
        if not isinstance(permission, str) or "." not in permission:
            raise ImproperlyConfigured(
                f"{module.__name__} must name its PERMISSION ('app.codename')"
            )
        api.add_router(f"/{label}/", module.router, auth=StaffSessionAuth(permission))
    return api


# The docs page runs django-ninja's bundled Swagger UI with the staff session's cookies: it
# may load scripts, styles and data from this origin only.
DOCS_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
    "form-action 'self'"
)


def _staff_only_docs() -> Any:
    from django.contrib.admin.views.decorators import staff_member_required

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        staff_view = staff_member_required(view)

        @wraps(view)
        def docs(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            response = staff_view(request, *args, **kwargs)
            response["Content-Security-Policy"] = DOCS_CSP
            return response

        return docs

    return decorate


api = build_api()
