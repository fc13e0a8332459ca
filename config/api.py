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

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from ninja import NinjaAPI
from ninja.errors import HttpError
from ninja.security import APIKeyCookie

from telegram_bot.features import api_modules


class StaffSessionAuth(APIKeyCookie):
    """The admin site's session, for staff users only (CSRF-checked on unsafe methods), and
    with ``permission`` for users who hold it. django-ninja documents subclassing
    ``APIKeyCookie`` with ``authenticate``; the session cookie is the key, and Django's
    session and authentication middleware have already turned it into ``request.user``."""

    param_name = settings.SESSION_COOKIE_NAME

    def __init__(self, permission: str | None = None) -> None:
        super().__init__()  # csrf=True: a cookie is sent by the browser on its own
        self.permission = permission

    def authenticate(self, request: HttpRequest, key: str | None) -> Any:
        user = request.user
        if not (user.is_authenticated and user.is_staff and user.is_active):
            return None
        if self.permission is not None and not user.has_perm(self.permission):
            raise HttpError(403, "You do not have permission to use this endpoint.")
        return user


def build_api() -> NinjaAPI:
    api = NinjaAPI(
        title="Community bot API",
        version="1",
        urls_namespace="api-v1",
        auth=StaffSessionAuth(),
        docs_decorator=_staff_only_docs(),
    )
    # Every answer is the staff's own view of personal data (members' names, usernames, last
    # seen): never stored by a browser or a proxy, as the admin site's pages are not. In
    # "view" mode the decorator wraps ninja's whole handler, so the 401/403 answers of the
    # authentication get the headers too.
    api.add_decorator(never_cache, mode="view")
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
