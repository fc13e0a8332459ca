"""The site's browser middleware, stepping aside for Telegram's deliveries.

Every request, the webhook's included, goes through Django's handler, its request signals and
``settings.MIDDLEWARE``. A few of those middleware classes do work on every request for what
only a browser uses: a session and its lazy user, the messages' storage (a signer made per
request), the language from ``Accept-Language``. A webhook delivery uses none of it (the
pipeline picks each update's language itself), so each of them is wrapped here, through
Django's documented middleware protocol (a factory taking ``get_response``, sync and async
capable), in a middleware that hands a delivery to the next one and every other request to
Django's. The rest of the list (request id, security headers and HTTPS redirect, host check,
``Content-Length``, CSRF, which the operation is exempt from, frame options, the login
lockout) is Django's and runs for the webhook as for any request.

The admin site's checks look for Django's classes (or subclasses) in ``MIDDLEWARE``
(admin.E408-E410): they are silenced in settings, and ``browser_middleware_configured``
(telegram_bot/ops/checks.py) asks the same of these wrappers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import iscoroutinefunction
from django.contrib.auth.middleware import AuthenticationMiddleware as DjangoAuthentication
from django.contrib.messages.middleware import MessageMiddleware as DjangoMessages
from django.contrib.sessions.middleware import SessionMiddleware as DjangoSessions
from django.http import HttpRequest, HttpResponseBase
from django.middleware.locale import LocaleMiddleware as DjangoLocale
from django.utils import translation
from django.utils.decorators import sync_and_async_middleware

from telegram_bot.transport import WEBHOOK_PATH


def is_delivery(request: HttpRequest) -> bool:
    """A request to the webhook's path: Telegram's, no browser's."""
    return request.path_info == WEBHOOK_PATH


def for_browsers(
    django_middleware: Callable[[Any], Any], *, on_delivery: Callable[[], None] | None = None
) -> Callable[[Any], Any]:
    """A middleware factory: ``django_middleware`` for every request but a delivery, which goes
    straight to the next middleware (``on_delivery`` called first)."""

    @sync_and_async_middleware
    def factory(get_response: Any) -> Any:
        browser = django_middleware(get_response)
        if iscoroutinefunction(get_response):

            async def async_middleware(request: HttpRequest) -> HttpResponseBase:
                if is_delivery(request):
                    if on_delivery is not None:
                        on_delivery()
                    answer: Awaitable[HttpResponseBase] = get_response(request)
                    return await answer
                response: HttpResponseBase = await browser(request)
                return response

            return async_middleware

        def middleware(request: HttpRequest) -> HttpResponseBase:
            if is_delivery(request):
                if on_delivery is not None:
                    on_delivery()
                return get_response(request)
            return browser(request)

        return middleware

    factory.__doc__ = f"Django's {django_middleware.__name__}, skipped for a webhook delivery."
    return factory


# No session (so no session cookie or Vary: Cookie) for a delivery.
SessionMiddleware = for_browsers(DjangoSessions)
# No request.user for a delivery (it has no session).
AuthenticationMiddleware = for_browsers(DjangoAuthentication)
# No message storage for a delivery.
MessageMiddleware = for_browsers(DjangoMessages)
# A delivery runs in LANGUAGE_CODE (what Django's would pick for a request without
# Accept-Language, as Telegram sends it): the thread may still hold an operator's language.
# Its answer gets no Vary: Accept-Language or Content-Language.
LocaleMiddleware = for_browsers(DjangoLocale, on_delivery=translation.deactivate)

# Each wrapper and the Django class it stands for (telegram_bot/ops/checks.py).
WRAPPED = {
    "telegram_bot.transport.middleware.SessionMiddleware": (
        "django.contrib.sessions.middleware.SessionMiddleware"
    ),
    "telegram_bot.transport.middleware.AuthenticationMiddleware": (
        "django.contrib.auth.middleware.AuthenticationMiddleware"
    ),
    "telegram_bot.transport.middleware.MessageMiddleware": (
        "django.contrib.messages.middleware.MessageMiddleware"
    ),
    "telegram_bot.transport.middleware.LocaleMiddleware": (
        "django.middleware.locale.LocaleMiddleware"
    ),
}
