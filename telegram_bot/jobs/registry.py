"""Job kinds and their handlers, gathered from each app's ``tasks.py`` (``JOB_HANDLERS``)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from importlib import import_module
from typing import TYPE_CHECKING, Any

from django.conf import settings

if TYPE_CHECKING:
    from telegram_bot.jobs.runner import JobRun

JobHandler = Callable[[dict[str, Any], "JobRun"], None]

_handlers: dict[str, JobHandler] | None = None
_lock = threading.Lock()


def job_handlers() -> dict[str, JobHandler]:
    global _handlers
    if _handlers is None:
        with _lock:
            if _handlers is None:
                _handlers = _collect()
    return _handlers


def _collect() -> dict[str, JobHandler]:
    handlers: dict[str, JobHandler] = {}
    for app in ["telegram_bot", *settings.FEATURE_APPS]:
        name = f"{app}.tasks"
        try:
            module = import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue  # the app has no tasks module
            raise
        for kind, handler in getattr(module, "JOB_HANDLERS", {}).items():
            if kind in handlers:
                raise ValueError(f"job kind {kind!r} declared twice")
            handlers[kind] = handler
    return handlers
