"""System checks run at start (``manage.py check``, ``migrate``, ``runbot``, the run command)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, register

from telegram_bot.admins import check_admin_configuration
from telegram_bot.transport.middleware import WRAPPED


@register()
def admin_configuration(app_configs: Any, **kwargs: Any) -> list[CheckMessage]:
    return [Error(problem, id="telegram_bot.E001") for problem in check_admin_configuration()]


# What the admin site's own checks ask of MIDDLEWARE (admin.E408, E409, E410, silenced in
# settings: they look for Django's classes, and ours are wrappers of them).
ADMIN_MIDDLEWARE = (
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
)


@register()
def browser_middleware_configured(app_configs: Any, **kwargs: Any) -> list[CheckMessage]:
    present = {WRAPPED.get(path, path) for path in settings.MIDDLEWARE}
    return [
        Error(
            f"'{needed}' (or telegram_bot.transport.middleware's wrapper of it) must be in "
            "MIDDLEWARE in order to use the admin application.",
            id="telegram_bot.E002",
        )
        for needed in ADMIN_MIDDLEWARE
        if needed not in present
    ]
