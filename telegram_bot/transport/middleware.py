"""The site's browser middleware, stepping aside for Telegram's deliveries.

Every request, the webhook's included, goes through Django's handler, its request signals and
``settings.MIDDLEWARE``. A few of those middleware classes do work on every request for what
only a browser uses: a session and its lazy user, the messages' storage (a signer made per
request), the language from ``Accept-Language``. A webhook delivery uses none of it (the
pipeline picks each update's language itself), so these subclasses of Django's documented
middleware return early for ``POST /telegram/webhook`` and behave as Django's for every other
request. The rest of the list (request id, security headers and HTTPS redirect, host check,
``Content-Length``, CSRF, which the operation is exempt from, frame options, the login
lockout) is Django's and runs for the webhook as for any request.
"""

from __future__ import annotations

from django.contrib.auth.middleware import AuthenticationMiddleware as DjangoAuthentication
from django.contrib.messages.middleware import MessageMiddleware as DjangoMessages
from django.contrib.sessions.middleware import SessionMiddleware as DjangoSessions
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.middleware.locale import LocaleMiddleware as DjangoLocale
from django.utils import translation

from telegram_bot.transport import WEBHOOK_PATH


def is_delivery(request: HttpRequest) -> bool:
    """A request to the webhook's path: Telegram's, no browser's."""
    return request.path_info == WEBHOOK_PATH


class SessionMiddleware(DjangoSessions):
    """Django's, with no session for a webhook delivery."""

    def process_request(self, request: HttpRequest) -> None:
        if not is_delivery(request):
            super().process_request(request)

    def process_response(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        if is_delivery(request):
            return response
        return super().process_response(request, response)


class AuthenticationMiddleware(DjangoAuthentication):
    """Django's, with no ``request.user`` for a webhook delivery (which has no session)."""

    def process_request(self, request: HttpRequest) -> None:
        if not is_delivery(request):
            super().process_request(request)


class MessageMiddleware(DjangoMessages):
    """Django's, with no message storage for a webhook delivery."""

    def process_request(self, request: HttpRequest) -> None:
        if not is_delivery(request):
            super().process_request(request)

    def process_response(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        if is_delivery(request):
            return response
        return super().process_response(request, response)


class LocaleMiddleware(DjangoLocale):
    """Django's; a webhook delivery runs in ``LANGUAGE_CODE`` (what Django's would pick for a
    request without ``Accept-Language``, as Telegram sends it), and its answer gets no
    ``Vary: Accept-Language`` or ``Content-Language``."""

    def process_request(self, request: HttpRequest) -> None:
        if is_delivery(request):
            translation.deactivate()  # the thread may still hold an operator's language
            return
        super().process_request(request)

    def process_response(
        self, request: HttpRequest, response: HttpResponseBase
    ) -> HttpResponseBase:
        if is_delivery(request):
            return response
        return super().process_response(request, response)
