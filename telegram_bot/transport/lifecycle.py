"""A webhook request's start and end without the request signals, while only Django listens.

Django sends ``request_started`` when a request comes in and ``request_finished`` when the
server closes its answer. Its own receivers are all that listen in a running web worker:
``reset_queries`` and ``close_old_connections`` at the start; ``close_old_connections``,
``close_caches`` and ``reset_urlconf`` at the end. ``started`` and ``finished`` do the same
work in one pass each, without the dispatch, and skip closing the caches when no configured
cache backend closes anything (django-redis without ``CLOSE_CONNECTION``, the local-memory
cache: their ``close`` does nothing, at a cost of its own on every request). The web worker's
WSGI application uses them for the webhook's requests only while ``only_django_listens``;
otherwise (a test's receiver, an app that connects one) the signals are sent as always.
"""

from __future__ import annotations

import contextlib
from typing import Any

from django.conf import settings
from django.core import signals
from django.core.cache import caches, close_caches
from django.core.cache.backends.base import BaseCache
from django.core.handlers.base import reset_urlconf
from django.core.signals import setting_changed
from django.db import close_old_connections, connections, reset_queries
from django.http import HttpResponse
from django.urls import set_urlconf
from django.utils.module_loading import import_string

_STARTED = [reset_queries, close_old_connections]
_FINISHED = [close_old_connections, close_caches, reset_urlconf]
_NONE_ID = id(None)  # the sender key of a receiver for every sender


def _keys(receivers: list[Any]) -> frozenset[tuple[int, int]]:
    """The signals' lookup keys of receivers for every sender: (receiver id, sender id)."""
    return frozenset((id(receiver), _NONE_ID) for receiver in receivers)


_STARTED_KEYS, _FINISHED_KEYS = _keys(_STARTED), _keys(_FINISHED)


def only_django_listens() -> bool:
    """True while the request signals' receivers are exactly Django's own, for any sender (in
    any order: a receiver disconnected and connected again comes last)."""
    return _listening(signals.request_started, _STARTED_KEYS) and _listening(
        signals.request_finished, _FINISHED_KEYS
    )


def _listening(signal: Any, expected: frozenset[tuple[int, int]]) -> bool:
    """Compared as a set: a lookup key may also be (dispatch_uid, sender id), which does not
    sort beside the others."""
    receivers = signal.receivers
    return len(receivers) == len(expected) and {entry[0] for entry in receivers} == expected


def started() -> None:
    """``reset_queries`` and ``close_old_connections``, in one pass."""
    for connection in connections.all(initialized_only=True):
        connection.queries_log.clear()
        connection.close_if_unusable_or_obsolete()


def finished() -> None:
    """``close_old_connections``, ``close_caches`` (when a cache closes anything) and
    ``reset_urlconf``."""
    for connection in connections.all(initialized_only=True):
        connection.close_if_unusable_or_obsolete()
    if caches_close_something():
        caches.close_all()
    set_urlconf(None)


_closing: bool | None = None  # caches_close_something, worked out once per CACHES


def caches_close_something() -> bool:
    global _closing
    if _closing is None:
        _closing = any(_closes(config) for config in settings.CACHES.values())
    return _closing


def _closes(config: dict[str, Any]) -> bool:
    """Whether a cache of this configuration does anything on ``close()`` (the request's end);
    a backend not known here is taken to."""
    backend = config.get("BACKEND", "")
    if backend == "django_redis.cache.RedisCache":
        options = config.get("OPTIONS") or {}
        default = getattr(settings, "DJANGO_REDIS_CLOSE_CONNECTION", False)
        return bool(options.get("CLOSE_CONNECTION", default))
    try:
        backend_class = import_string(backend)
    except ImportError:
        return True
    return getattr(backend_class, "close", None) is not BaseCache.close


def _forget(*, setting: str, **kwargs: Any) -> None:
    global _closing
    if setting in ("CACHES", "DJANGO_REDIS_CLOSE_CONNECTION"):
        _closing = None


setting_changed.connect(_forget, dispatch_uid="webhook-lifecycle-caches")


class WebhookResponse(HttpResponse):
    """The webhook's answer: closing it ends the request as ``finished`` does while only
    Django listens to ``request_finished``, and sends the signal otherwise."""

    def close(self) -> None:
        if not only_django_listens():
            super().close()
            return
        closers: list[Any] = self._resource_closers  # type: ignore[attr-defined]
        for closer in closers:
            with contextlib.suppress(Exception):  # as Django's close: every closer runs
                closer()
        closers.clear()
        self.closed = True
        finished()
