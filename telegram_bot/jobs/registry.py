"""Job kinds and their handlers, as the installed apps declare them (``job_handlers``)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from telegram_bot.features import job_handler_maps

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
    for declared in job_handler_maps():
        for kind, handler in declared.items():
            if kind in handlers:
                raise ValueError(f"job kind {kind!r} declared twice")
            handlers[kind] = handler
    return handlers


def rerun_refusal(kind: str, payload: dict[str, Any]) -> str | None:
    """Why running a job of ``kind`` again now would do nothing (its handler's
    ``rerun_refusal(payload)``, when it declares one), or None."""
    handler = job_handlers().get(kind)
    check = getattr(handler, "rerun_refusal", None)
    return check(payload) if check is not None else None


def tells_admins(kind: str) -> bool:
    """Whether the handler of ``kind`` tells the admins about its own final failures (it
    declares ``tells_admins = True``): the runner then records a failed job without a notice
    of its own, so that one failure reaches each admin once."""
    return bool(getattr(job_handlers().get(kind), "tells_admins", False))
