"""Health endpoints: ``/healthz`` (the process serves, and which version) and ``/readyz`` (its
backends answer; and whether a worker cluster was seen recently, which informs but does not
fail readiness: a web node can serve webhooks while the worker restarts). ``/readyz`` also
reports a Redis that may evict state or is nearly full (``kv_memory_findings``): a warning in
its answer, not a failure, since taking every node out of service would not help."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import DatabaseError, connection
from django.db.models import Max
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from telegram_bot.errors import StateError
from telegram_bot.log_context import expected_failure
from telegram_bot.state import get_store
from telegram_bot.state.base import MemoryStatus

log = logging.getLogger(__name__)


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    from config.version import VERSION

    return JsonResponse({"status": "ok", "version": VERSION})


@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    """200 when the database and the KV store answer; 503 naming what failed."""
    checks = {"database": _check_database(), "kv": _check_kv()}
    failed = sorted(name for name, ok in checks.items() if not ok)
    body: dict[str, object] = {
        "status": "ok" if not failed else "unavailable",
        "checks": {name: "ok" if ok else "unavailable" for name, ok in checks.items()},
    }
    if failed:
        body["failed"] = failed
    if checks["kv"]:
        body.update(_kv_memory())
    body["worker"] = _worker_status() if checks["database"] else None
    response = JsonResponse(body, status=503 if failed else 200)
    if failed:
        # Expected while a backend is down, and logged above with the reason: no
        # "ERROR django.request" per probe on top.
        expected_failure(request)
    return response


def kv_memory_findings(status: MemoryStatus | None) -> tuple[str | None, list[str]]:
    """(problem, warnings) about the KV server's memory: a policy other than ``noeviction``
    is a problem (an evicted done-marker makes a re-delivered update act twice); a policy it
    would not say, and memory above 80% of ``maxmemory``, are warnings."""
    if status is None:  # a backend that never evicts
        return None, []
    problem, warnings = None, []
    if status.policy is None:
        warnings.append(
            "Redis's maxmemory-policy could not be checked (the server refused INFO and "
            "CONFIG GET): make sure it is noeviction"
        )
    elif status.policy != "noeviction":
        problem = (
            f"Redis's maxmemory-policy is {status.policy}: it may evict done-markers and "
            "counters (a re-delivered update would then act twice); it must be noeviction"
        )
    used, limit = status.used_bytes, status.max_bytes
    if used is not None and limit and used > limit * 0.8:
        warnings.append(
            f"Redis uses {used * 100 // limit}% of its maxmemory ({used // 2**20} MiB of "
            f"{limit // 2**20} MiB): when full it refuses writes and updates are answered 503"
        )
    return problem, warnings


def _kv_memory() -> dict[str, object]:
    """``/readyz``'s report of the KV server's memory: nothing for a store that never evicts
    or a server that does not answer (the kv check says so)."""
    try:
        status = get_store().memory_status()
    except StateError as exc:
        log.warning("readiness: KV store memory not checked: %s", exc)
        return {}
    if status is None:
        return {}
    problem, warnings = kv_memory_findings(status)
    report: dict[str, object] = {
        "kv_memory": {
            "maxmemory_policy": status.policy,
            "used_bytes": status.used_bytes,
            "max_bytes": status.max_bytes,
        }
    }
    if problem or warnings:
        report["warnings"] = [problem, *warnings] if problem else warnings
    return report


def worker_last_seen() -> datetime | None:
    """When a worker cluster last finished a task (django-q2 stores every result; the
    ``jobs_tick`` schedule runs one a minute)."""
    from django_q.models import Task

    return Task.objects.aggregate(last=Max("stopped"))["last"]


def _worker_status() -> dict[str, object]:
    window = settings.WORKER_SEEN_WITHIN_SECONDS
    try:
        seen = worker_last_seen()
    except DatabaseError:
        return {"seen_recently": False, "last_task_seconds_ago": None}
    age = None if seen is None else max(0, int((timezone.now() - seen).total_seconds()))
    return {
        "seen_recently": age is not None and age <= window,
        "last_task_seconds_ago": age,
        "window_seconds": window,
    }


def worker_seen_recently() -> bool:
    seen = worker_last_seen()
    window = timedelta(seconds=settings.WORKER_SEEN_WITHIN_SECONDS)
    return seen is not None and timezone.now() - seen <= window


def _check_database() -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return True
    except DatabaseError as exc:
        log.warning("readiness: database unavailable: %s", exc)
        return False


def _check_kv() -> bool:
    try:
        get_store().ping()
        return True
    except StateError as exc:
        log.warning("readiness: KV store unavailable: %s", exc)
        return False
