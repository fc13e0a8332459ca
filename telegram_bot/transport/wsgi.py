"""The web worker's WSGI handler: Django's, with the webhook's requests on a chain of their own.

Telegram's deliveries are most of a busy server's requests, and the site's middleware is for
browsers: sessions, the admin's language, CSRF, authentication, messages, frame options, static
files and the login lockout. None of it reads or changes a webhook answer, and together it cost
about a seventh of a web worker's CPU per group message (py-spy on the served webhook, see
``bench/RESULTS.md``). So ``POST /telegram/webhook`` (the exact path; any method, so that the
405 answer is the operation's own) passes only through what it needs:

- the request id (``RequestIdMiddleware``: the ``X-Request-ID`` header and the log context);
- the ``ALLOWED_HOSTS`` check (400 for a host that is not allowed, as everywhere else) and the
  ``Content-Length`` of the answer (as ``CommonMiddleware`` sets it; without it gunicorn
  sends the answer chunked);
- Django's exception handling, URL resolution and the ninja operation, with its own checks
  (405, 415, 413, 401, 400) and the pipeline. The path being one, its URL match is worked out
  once per URLconf and reused (resolving it walked the site's URL patterns every request).

Around it, the request's start and end do what Django's own receivers of ``request_started``
and ``request_finished`` do (``lifecycle``): database connections are checked and closed by
their rules, the query logs emptied, the caches closed when a cache backend needs it, the
URLconf reset. They do it without sending the signals, and only while those receivers are
Django's own and nothing else; once anything else listens (a test, another app), the
signals are sent as for every request. The signals and the closes of caches that close
nothing cost about a twentieth of a web worker's CPU per group message (py-spy, in process).
Every other path takes the full chain.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.handlers.base import BaseHandler
from django.core.handlers.exception import convert_exception_to_response
from django.core.handlers.wsgi import WSGIHandler, get_script_name
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.urls import ResolverMatch, get_resolver, set_script_prefix

from telegram_bot.log_context import RequestIdMiddleware
from telegram_bot.transport import WEBHOOK_PATH, lifecycle


class _WebhookChain(BaseHandler):
    """A handler whose middleware is the request id and the host check, nothing else."""

    _match: tuple[object, ResolverMatch] | None = None

    def load_middleware(self, is_async: bool = False) -> None:
        self._view_middleware: list[Callable[..., object]] = []
        self._template_response_middleware: list[Callable[..., object]] = []
        self._exception_middleware: list[Callable[..., object]] = []
        view: Any = convert_exception_to_response(self._get_response)  # type: ignore[attr-defined]
        checked: Any = convert_exception_to_response(_host_and_length(view))
        self._middleware_chain = convert_exception_to_response(RequestIdMiddleware(checked))

    def resolve_request(self, request: HttpRequest) -> ResolverMatch:
        """The webhook path's match, resolved once per URLconf (``settings.ROOT_URLCONF``, or a
        request's own ``urlconf`` resolved as Django does). The view gets its arguments as a
        copy (``**kwargs``): nothing changes the shared match."""
        if hasattr(request, "urlconf"):
            return super().resolve_request(request)
        resolver = get_resolver()
        cached = self._match
        if cached is None or cached[0] is not resolver:
            cached = (resolver, resolver.resolve(request.path_info))
            self._match = cached
        request.resolver_match = cached[1]
        return cached[1]


def _host_and_length(
    get_response: Callable[[HttpRequest], HttpResponseBase],
) -> Callable[[HttpRequest], HttpResponseBase]:
    def host_and_length(request: HttpRequest) -> HttpResponseBase:
        request.get_host()  # DisallowedHost -> 400, as CommonMiddleware answers elsewhere
        response = get_response(request)
        if isinstance(response, HttpResponse) and not response.has_header("Content-Length"):
            response.headers["Content-Length"] = str(len(response.content))
        return response

    return host_and_length


class Application(WSGIHandler):
    """``config.wsgi.application``: the webhook's path on its own chain, the rest as Django."""

    def __init__(self) -> None:
        super().__init__()
        self._webhook = _WebhookChain()
        self._webhook.load_middleware()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        """Django's ``WSGIHandler.__call__``; for the webhook, with its start and end done by
        ``lifecycle`` instead of the request signals while only Django listens to them (the
        end: ``lifecycle.WebhookResponse.close``, the webhook's answers)."""
        if environ.get("PATH_INFO") != WEBHOOK_PATH or not lifecycle.only_django_listens():
            return super().__call__(environ, start_response)
        set_script_prefix(get_script_name(environ))
        lifecycle.started()
        request = self.request_class(environ)
        response = self._webhook.get_response(request)
        response._handler_class = self.__class__  # type: ignore[attr-defined]
        status = f"{response.status_code} {response.reason_phrase}"
        headers = [
            *response.items(),
            *(("Set-Cookie", c.OutputString()) for c in response.cookies.values()),
        ]
        start_response(status, headers)
        return response

    def get_response(self, request: HttpRequest) -> HttpResponseBase:
        if request.path_info == WEBHOOK_PATH:
            return self._webhook.get_response(request)
        return super().get_response(request)
