"""``POST /telegram/webhook``: a django-ninja operation on its own API, transport checks only.

Order: 405 method, 415 content type, 413 size, 401 secret (constant-time;
nothing else happens), all decided before the body is read. A refused body is then read and
dropped, up to ``DISCARD_LIMIT_BYTES``, so that the answer reaches a client still sending it
(a server that closes a connection with unread bytes resets it, and the client sees the reset
instead of the answer). Then 400 for a body that is not an Update (JSON and shape checked in
one pass by the Update model, never ninja's 422). Then the pipeline decides between 200 and
503 (with ``Retry-After``, which Telegram honours). A 200 says the outcome in
``X-Update-Outcome``, and its body is ``{"ok": true, "outcome": ...}`` or, when a handler
answered a button press, that Bot API call for Telegram to make (the webhook reply,
``telegram_bot/pipeline/reply.py``). The request body is documented in this API's own OpenAPI
schema (``/telegram/openapi.json``, for staff only, as ``/api/v1/``'s) as the Update model,
but parsed here, after the checks, rather than by ninja before them.
"""

# No ``from __future__ import annotations``: ninja reads the view's annotations through the
# metrics wrapper, whose module could not resolve them as names (``response: HttpResponse``).
import hmac
import json
import logging
from typing import Any

from django.conf import settings
from django.contrib.admin.views.decorators import staff_member_required
from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpRequest, HttpResponse, JsonResponse
from ninja import NinjaAPI

from telegram_bot.metrics import count_webhook_reply, observe_webhook
from telegram_bot.numbers import ascii_int
from telegram_bot.pipeline.process import Outcome, process_update
from telegram_bot.pipeline.reply import webhook_reply
from telegram_bot.updates import Update, UpdateShapeError, parse_update_json

log = logging.getLogger(__name__)
MAX_BODY_BYTES = 1024 * 1024
# A refused body is read (and dropped) up to this size; a larger one is left unread and the
# server closes the connection on it.
DISCARD_LIMIT_BYTES = 4 * MAX_BODY_BYTES
_DISCARD_CHUNK = 64 * 1024
SECRET_HEADER = "HTTP_X_TELEGRAM_BOT_API_SECRET_TOKEN"  # noqa: S105 - a header name
OUTCOME_HEADER = "X-Update-Outcome"
RETRY_AFTER = {Outcome.IN_PROGRESS: "5", Outcome.UNAVAILABLE: "10"}
# The answer to a final outcome, encoded once: JsonResponse would encode it for every update.
_ANSWERS = {
    outcome: json.dumps({"ok": True, "outcome": outcome.value}).encode()
    for outcome in Outcome
    if outcome.final
}
OTHER_METHODS = ["GET", "PUT", "PATCH", "DELETE"]


webhook_api = NinjaAPI(
    title="Telegram webhook",
    version="1",
    description="Where Telegram delivers Updates (setWebhook with the secret token).",
    urls_namespace="telegram",
    docs_url=None,  # no interactive page: the schema is for operators' tools
    # The schema names the secret header and every answer: staff only, as /api/v1/'s
    # (anyone else is sent to the admin login).
    docs_decorator=staff_member_required,
)

_ANSWER = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}, "outcome": {"type": "string"}},
}
_REPLY = {
    "type": "object",
    "description": "a Bot API call for Telegram to make (the webhook reply)",
    "properties": {"method": {"type": "string", "enum": ["answerCallbackQuery"]}},
    "required": ["method"],
    "additionalProperties": True,
}
_REFUSAL = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}, "error": {"type": "string"}},
}


def _openapi() -> dict[str, Any]:
    update_schema = Update.model_json_schema(by_alias=True, ref_template="#/$defs/{model}")
    refusal = {"content": {"application/json": {"schema": _REFUSAL}}}
    return {
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": update_schema}},
        },
        "parameters": [
            {
                "name": "X-Telegram-Bot-Api-Secret-Token",
                "in": "header",
                "required": True,
                "schema": {"type": "string"},
            }
        ],
        "responses": {
            200: {
                "description": "handled, a duplicate, ignored, refused or dead-lettered",
                "headers": {
                    "X-Update-Outcome": {
                        "description": "the pipeline's outcome",
                        "schema": {"type": "string"},
                    }
                },
                "content": {"application/json": {"schema": {"oneOf": [_ANSWER, _REPLY]}}},
            },
            400: {"description": "not a Telegram Update", **refusal},
            401: {"description": "secret token missing or wrong", **refusal},
            413: {"description": "body larger than 1 MiB", **refusal},
            415: {"description": "not application/json", **refusal},
            503: {"description": "in progress elsewhere or state unavailable", **refusal},
        },
    }


@webhook_api.post("/webhook", operation_id="telegram_webhook", openapi_extra=_openapi())
@observe_webhook
def telegram_webhook(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    # ``response``: the one ninja makes for every call (its "temporal response", JSON, empty);
    # a final outcome's answer is written into it rather than into a second response.
    content_type = request.content_type or ""
    if content_type.lower() != "application/json":
        return _refuse(request, 415, "content type must be application/json")
    declared = ascii_int(request.META.get("CONTENT_LENGTH") or "0")
    if declared is None or declared > MAX_BODY_BYTES:
        return _refuse(request, 413, "body larger than 1 MiB")
    if not _secret_ok(request.META.get(SECRET_HEADER, "")):
        return _refuse(request, 401, "unauthorized")
    body = request.read(MAX_BODY_BYTES + 1)
    if len(body) > MAX_BODY_BYTES:
        return _error(413, "body larger than 1 MiB")
    try:
        update = parse_update_json(body)
    except UpdateShapeError as exc:
        return _error(400, f"not a Telegram Update: {exc}")
    with webhook_reply(update.update_id) as slot:
        outcome = process_update(update)
    if outcome.final:
        if slot.call is not None:  # Telegram makes this call (reply.py)
            count_webhook_reply(slot.call["method"])
            response.content = json.dumps(slot.call, cls=DjangoJSONEncoder).encode()
        else:
            response.content = _ANSWERS[outcome]
        response[OUTCOME_HEADER] = outcome.value
        return response
    refused = _error(503, outcome.value)
    refused["Retry-After"] = RETRY_AFTER[outcome]
    return refused


@webhook_api.api_operation(OTHER_METHODS, "/webhook", include_in_schema=False)
def telegram_webhook_other_methods(request: HttpRequest) -> HttpResponse:
    response = _refuse(request, 405, "method not allowed")
    response["Allow"] = "POST"
    return response


def _secret_ok(given: str) -> bool:
    expected = settings.TELEGRAM_WEBHOOK_SECRET
    if not expected:
        # No secret configured: refuse everything rather than accept anyone's updates.
        return False
    return hmac.compare_digest(given.encode("utf-8", "replace"), expected.encode("utf-8"))


def _refuse(request: HttpRequest, status: int, message: str) -> JsonResponse:
    """The error answer to a request whose body was not read: read and drop the body first,
    unless it is declared larger than ``DISCARD_LIMIT_BYTES`` (or not declared as a byte
    count: Django then reads nothing)."""
    declared = ascii_int(request.META.get("CONTENT_LENGTH") or "0")
    if declared is not None and declared <= DISCARD_LIMIT_BYTES:
        while request.read(_DISCARD_CHUNK):
            pass
    return _error(status, message)


def _error(status: int, message: str) -> JsonResponse:
    return JsonResponse({"ok": False, "error": message}, status=status)
