"""``POST /telegram/webhook``: transport checks only, then the pipeline.

Order (DESIGN section 3): 405 method, 415 content type, 413 size, 401 secret (constant-time;
nothing else happens), 400 JSON and Update shape. Then the pipeline decides between 200 and 503
(with ``Retry-After``, which Telegram honours).
"""

from __future__ import annotations

import hmac
import json
import logging

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from telegram_bot.metrics import observe_webhook
from telegram_bot.pipeline import Outcome, process_update
from telegram_bot.updates import UpdateShapeError, parse_update

log = logging.getLogger(__name__)
MAX_BODY_BYTES = 1024 * 1024
SECRET_HEADER = "HTTP_X_TELEGRAM_BOT_API_SECRET_TOKEN"  # noqa: S105 - a header name
RETRY_AFTER = {Outcome.IN_PROGRESS: "5", Outcome.UNAVAILABLE: "10"}


@csrf_exempt
@observe_webhook
def telegram_webhook(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        response = _error(405, "method not allowed")
        response["Allow"] = "POST"
        return response
    content_type = request.content_type or ""
    if content_type.lower() != "application/json":
        return _error(415, "content type must be application/json")
    declared = request.META.get("CONTENT_LENGTH") or "0"
    if not declared.isdigit() or int(declared) > MAX_BODY_BYTES:
        return _error(413, "body larger than 1 MiB")
    if not _secret_ok(request.META.get(SECRET_HEADER, "")):
        return _error(401, "unauthorized")
    body = request.read(MAX_BODY_BYTES + 1)
    if len(body) > MAX_BODY_BYTES:
        return _error(413, "body larger than 1 MiB")
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return _error(400, "body is not valid JSON")
    try:
        parse_update(data)
    except UpdateShapeError as exc:
        return _error(400, f"not a Telegram Update: {exc}")
    outcome = process_update(data)
    if outcome.final:
        return JsonResponse({"ok": True, "outcome": outcome.value})
    response = _error(503, outcome.value)
    response["Retry-After"] = RETRY_AFTER[outcome]
    return response


def _secret_ok(given: str) -> bool:
    expected = settings.TELEGRAM_WEBHOOK_SECRET
    if not expected:
        # No secret configured: refuse everything rather than accept anyone's updates.
        return False
    return hmac.compare_digest(given.encode("utf-8", "replace"), expected.encode("utf-8"))


def _error(status: int, message: str) -> JsonResponse:
    return JsonResponse({"ok": False, "error": message}, status=status)
