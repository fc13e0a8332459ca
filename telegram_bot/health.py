"""Health endpoints: ``/healthz`` (the process serves) and ``/readyz`` (its backends answer)."""

from __future__ import annotations

import logging

from django.db import DatabaseError, connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from telegram_bot.errors import StateError
from telegram_bot.state import get_store

log = logging.getLogger(__name__)


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


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
    return JsonResponse(body, status=503 if failed else 200)


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
