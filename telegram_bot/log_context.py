"""What a log line is about: the request id and the update id.

``RequestIdMiddleware`` gives every request an id (the caller's ``X-Request-ID`` when it is a
short token, else a new one) and sends it back in the response header. The update pipeline sets
the update id (telegram_bot.metrics.observe_updates). ``ContextFilter`` copies both onto every
log record; with ``LOG_FORMAT=json`` python-json-logger writes them in each line's object
(``LOGGING`` in ``config/settings.py``). Records reach the formatter after the redaction
filter, so no token is in them.
"""

from __future__ import annotations

import itertools
import logging
import os
import re
import uuid
import weakref
from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # no Django at import: the Telegram client's metrics import this module
    from django.http import HttpRequest, HttpResponse

REQUEST_ID_HEADER = "X-Request-ID"
# The header as the WSGI environ names it: read there, not from ``request.headers``, which
# builds a mapping of every header on first use (the webhook needs no other).
_REQUEST_ID_META = "HTTP_X_REQUEST_ID"
_REQUEST_ID_RE = re.compile(r"^[A-Za-z0-9._-]{1,64}$")

request_id: ContextVar[str | None] = ContextVar("request_id", default=None)
update_id: ContextVar[int | None] = ContextVar("update_id", default=None)
# The update a request handled, kept past the pipeline for the request's own last log lines.
_request_update: ContextVar[list[int] | None] = ContextVar("request_update", default=None)
# A new request id: this process's random half and a counter (32 hex digits, like a uuid4's),
# not a uuid4 a request (a system call each). A forked process draws its own half.
_id_half = uuid.uuid4().hex[:16]
_id_counter = itertools.count()


def new_request_id() -> str:
    return f"{_id_half}{next(_id_counter) & 0xFFFF_FFFF_FFFF_FFFF:016x}"


def _new_id_half() -> None:
    global _id_half, _id_counter
    _id_half, _id_counter = uuid.uuid4().hex[:16], itertools.count()


os.register_at_fork(after_in_child=_new_id_half)


def set_update_id(value: int | None) -> object:
    """Mark what follows as about update ``value``; returns a token for ``reset_update_id``."""
    holder = _request_update.get()
    if holder is not None and value is not None:
        holder[:] = [value]
    return update_id.set(value)


def reset_update_id(token: object) -> None:
    update_id.reset(token)  # type: ignore[arg-type]


def current_update_id() -> int | None:
    value = update_id.get()
    if value is None:
        holder = _request_update.get()
        value = holder[0] if holder else None
    return value


class RequestIdMiddleware:
    """Give each request an id, visible in its log lines and in the ``X-Request-ID`` header."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        given = request.META.get(_REQUEST_ID_META, "")
        rid = given if _REQUEST_ID_RE.match(given) else new_request_id()
        rid_token = request_id.set(rid)
        update_token = _request_update.set([])
        try:
            response = self.get_response(request)
        finally:
            _request_update.reset(update_token)
            request_id.reset(rid_token)
        response[REQUEST_ID_HEADER] = rid
        return response


class ContextFilter(logging.Filter):
    """Add ``request_id`` and ``update_id`` (None outside a request or update) to a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id.get()
        record.update_id = current_update_id()
        return True


# Requests whose error answer is expected and already logged with its reason (see
# ``expected_failure``). Weak: an entry goes with its request.
_expected_failures: weakref.WeakSet[HttpRequest] = weakref.WeakSet()


def expected_failure(request: HttpRequest) -> None:
    """This request's 4xx/5xx answer is expected and logged already with its reason (a 503
    while a backend is down, an update another worker holds): Django's ``django.request``
    line for it is dropped by ``ExpectedFailureFilter``."""
    _expected_failures.add(request)


class ExpectedFailureFilter(logging.Filter):
    """On the ``django.request`` logger: drop the line of a request marked with
    ``expected_failure``. Django documents the ``request`` and ``status_code`` that each of
    that logger's records carries (topics/logging, django.request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        request = getattr(record, "request", None)
        return request is None or request not in _expected_failures
