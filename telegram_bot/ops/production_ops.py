"""The operational checks of the production gate (seed 003 section 29): the smoke test, the
worker heartbeat and the documented backups. Listed in telegram_bot/ops/production.py.

The smoke test sends a test update, signed with the webhook secret, through the real webhook
path: over HTTP to the deployment (``check_production --url https://bot.example.org``) or, without
a URL, through Django's full request handling in this process. The update is a button press
that no route handles, from a user id that Telegram never assigns, so no feature acts on it and
nothing is sent to Telegram. It passes when the answer is 200 with a final outcome and the
update's done-marker is in the KV store this command reads (so the web node and this machine
share one state); then the marker is deleted.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import time
import urllib.error
import urllib.request
from typing import Any

from django.conf import settings

from telegram_bot.errors import StateError
from telegram_bot.ops.health import worker_seen_recently
from telegram_bot.pipeline import idempotency
from telegram_bot.state import get_store
from telegram_bot.transport import WEBHOOK_PATH

SMOKE_USER_ID = 1  # never a real account: Telegram's user ids start far above
FINAL_OUTCOMES = {"processed", "ignored", "duplicate", "refused"}
# Set for one run by run_checks(base_url=...).
smoke_base_url: str | None = None


class Passed(str):
    """A check's result when it passed, with what it verified (printed by check_production)."""


class Warned(str):
    """A check's result when it passed with a warning: something to look at that does not
    stop production (printed by check_production as ``[warn]``)."""


def smoke_update() -> dict[str, Any]:
    update_id = 2**52 + secrets.randbelow(2**40)  # far beyond Telegram's own update ids
    return {
        "update_id": update_id,
        "callback_query": {
            "id": f"smoke-{update_id}",
            "from": {"id": SMOKE_USER_ID, "is_bot": False, "first_name": "check_production"},
            "chat_instance": "check-production",
            "data": f"tgcp-smoke:{secrets.token_hex(4)}",
            "message": {
                "message_id": 1,
                "date": int(time.time()),
                "chat": {"id": SMOKE_USER_ID, "type": "private", "first_name": "check"},
                "text": "smoke test",
            },
        },
    }


def smoke_test() -> str | None:
    if not settings.TELEGRAM_WEBHOOK_SECRET:
        return "TELEGRAM_WEBHOOK_SECRET is not set: the webhook refuses every update"
    update = smoke_update()
    update_id = update["update_id"]
    started = time.monotonic()
    try:
        status, body = (
            _post_http(smoke_base_url, update) if smoke_base_url else _post_in_process(update)
        )
    except OSError as exc:
        return f"could not reach {smoke_base_url}{WEBHOOK_PATH}: {exc}"
    elapsed_ms = (time.monotonic() - started) * 1000
    try:
        outcome = str(json.loads(body).get("outcome") or json.loads(body).get("error"))
    except (ValueError, AttributeError):
        outcome = body[:80].decode("utf-8", "replace")
    try:
        store = get_store()
    except StateError as exc:
        return f"the KV store does not answer: {exc}"
    try:
        if status != 200 or outcome not in FINAL_OUTCOMES:
            return f"the webhook answered {status} ({outcome}) to the signed test update"
        if not idempotency.is_final(idempotency.read_marker(store, update_id)):
            return (
                f"the webhook answered 200 ({outcome}) but update {update_id} is not marked "
                "done in this KV store: do the web nodes and this machine share REDIS_URL?"
            )
    finally:
        with contextlib.suppress(StateError):  # unreachable: the failure above says so
            idempotency.forget(store, update_id)
            store.delete(f"dlq:{update_id}")
    where = smoke_base_url or "in-process"
    return Passed(
        f"signed update {update_id} answered 200 ({outcome}) in {elapsed_ms:.0f} ms "
        f"({where}), marked done, cleaned up"
    )


def _post_in_process(update: dict[str, Any]) -> tuple[int, bytes]:
    from django.test import Client

    hosts = [h.lstrip(".") for h in settings.ALLOWED_HOSTS if h not in ("*", "")]
    client = Client(
        HTTP_HOST=hosts[0] if hosts else "localhost",
        HTTP_X_FORWARDED_PROTO="https",
        HTTP_X_TELEGRAM_BOT_API_SECRET_TOKEN=settings.TELEGRAM_WEBHOOK_SECRET,
    )
    response = client.post(
        WEBHOOK_PATH, data=json.dumps(update), content_type="application/json", secure=True
    )
    return response.status_code, response.content


def _post_http(base_url: str, update: dict[str, Any]) -> tuple[int, bytes]:
    request = urllib.request.Request(  # noqa: S310 - the operator's own URL, http(s) checked
        base_url.rstrip("/") + WEBHOOK_PATH,
        data=json.dumps(update).encode(),
        headers={
            "Content-Type": "application/json",
            "X-Telegram-Bot-Api-Secret-Token": settings.TELEGRAM_WEBHOOK_SECRET,
        },
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def worker_heartbeat() -> str | None:
    if worker_seen_recently():
        return None
    return (
        f"no worker cluster finished a task in the last {settings.WORKER_SEEN_WITHIN_SECONDS} s "
        "(is `manage.py qcluster` running, and are the schedules synced?)"
    )


def backups_documented() -> str | None:
    if settings.BACKUP_POLICY:
        return Passed(f"BACKUP_POLICY: {settings.BACKUP_POLICY}")
    return (
        "BACKUP_POLICY is not set: say where this deployment's database backups go, how often, "
        "and where the restore is tested (docs/operations.md, 'Backups and restore')"
    )
