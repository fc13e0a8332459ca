"""The webhook as an ordinary Django request, called as a server calls the WSGI application
(an environ and ``start_response``): Django's handler, its request signals and the site's
MIDDLEWARE, with the browser middleware stepping aside for Telegram's deliveries
(``telegram_bot/transport/middleware.py``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.http import HttpRequest, HttpResponse
from django.test.client import FakePayload, RequestFactory
from django.utils import translation

from stats.models import DailyUserStat
from telegram_bot.state import KVStore
from telegram_bot.transport import WEBHOOK_PATH
from tests.builders import make_message_update
from tests.conftest import WEBHOOK_SECRET
from tests.fakes.telegram import FakeTelegramServer
from tests.processes import ROOT, web_env

pytestmark = pytest.mark.django_db
CHAT = -100777


@pytest.fixture(scope="module")
def application() -> WSGIHandler:
    return WSGIHandler()  # what get_wsgi_application() returns once Django is set up


def call(
    application: WSGIHandler,
    path: str,
    *,
    method: str = "POST",
    body: bytes = b"",
    host: str = "localhost",
    **headers: str,
) -> tuple[int, dict[str, str], bytes]:
    environ = RequestFactory()._base_environ(
        PATH_INFO=path,
        REQUEST_METHOD=method,
        CONTENT_TYPE="application/json",
        CONTENT_LENGTH=str(len(body)),
        HTTP_HOST=host,
        **{"wsgi.input": FakePayload(body)},
        **headers,
    )
    answer: dict[str, Any] = {}

    def start_response(status: str, response_headers: list[tuple[str, str]]) -> None:
        answer["status"] = int(status.split()[0])
        answer["headers"] = dict(response_headers)

    # As Django's test client does: the test's transaction holds the connection.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        chunks = application(environ, start_response)
        try:
            content = b"".join(chunks)
        finally:
            chunks.close()  # type: ignore[attr-defined]
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)
    return answer["status"], answer["headers"], content


def group(text: str) -> dict[str, Any]:
    return make_message_update(text, chat_id=CHAT, chat_type="supergroup")


def deliver(application: WSGIHandler, update: dict[str, Any], **headers: str) -> Any:
    headers.setdefault("HTTP_X_TELEGRAM_BOT_API_SECRET_TOKEN", WEBHOOK_SECRET)
    return call(application, WEBHOOK_PATH, body=json.dumps(update).encode(), **headers)


def test_the_path_is_the_webhook_operations() -> None:
    from django.urls import reverse

    assert reverse("telegram:telegram_webhook") == WEBHOOK_PATH


def test_a_group_message_is_counted_through_the_sites_middleware(
    application: WSGIHandler, bot: FakeTelegramServer, memory_store: KVStore
) -> None:
    update = group("two words")
    status, headers, content = deliver(application, update, HTTP_X_REQUEST_ID="req-42")
    assert status == 200
    assert json.loads(content) == {"ok": True, "outcome": "processed"}
    assert headers["X-Update-Outcome"] == "processed"
    assert headers["X-Request-ID"] == "req-42"  # the request id middleware
    assert headers["Content-Length"] == str(len(content))  # CommonMiddleware: not chunked
    assert headers["X-Frame-Options"] == "DENY"  # the rest of the list ran too
    assert headers["X-Content-Type-Options"] == "nosniff"
    # What only a browser uses is left out: no session, messages or language negotiation.
    assert "Set-Cookie" not in headers
    assert "Vary" not in headers
    assert "Content-Language" not in headers
    row = DailyUserStat.objects.get(chat_id=CHAT)
    assert (row.message_count, row.word_count) == (1, 2)

    status, _, content = deliver(application, update)
    assert (status, json.loads(content)["outcome"]) == (200, "duplicate")


def test_a_request_id_that_is_no_short_token_is_replaced(
    application: WSGIHandler, bot: FakeTelegramServer, memory_store: KVStore
) -> None:
    _, headers, _ = deliver(application, group("hi"), HTTP_X_REQUEST_ID="bad id\n" * 20)
    assert headers["X-Request-ID"] != "bad id\n" * 20
    assert len(headers["X-Request-ID"]) == 32


def test_other_paths_keep_the_browser_middleware(application: WSGIHandler) -> None:
    status, headers, _ = call(application, "/admin/login/", method="GET", HTTP_ACCEPT_LANGUAGE="ru")
    assert status == 200
    assert headers["X-Frame-Options"] == "DENY"
    assert "X-Request-ID" in headers
    assert "csrftoken" in headers.get("Set-Cookie", "")
    assert "Accept-Language" in headers["Vary"] and "Cookie" in headers["Vary"]
    assert headers["Content-Language"] == "ru"


@pytest.mark.parametrize(("path", "made"), [(WEBHOOK_PATH, False), ("/admin/login/", True)])
def test_a_session_a_user_and_message_storage_are_made_for_browsers_only(
    path: str, made: bool
) -> None:
    from django.contrib.messages import get_messages
    from django.contrib.messages.storage.base import BaseStorage

    from telegram_bot.transport.middleware import (
        AuthenticationMiddleware,
        MessageMiddleware,
        SessionMiddleware,
    )

    seen: dict[str, bool] = {}

    def view(request: HttpRequest) -> HttpResponse:
        seen["session"] = hasattr(request, "session")
        seen["user"] = hasattr(request, "user")
        seen["messages"] = isinstance(get_messages(request), BaseStorage)
        return HttpResponse()

    chain = SessionMiddleware(AuthenticationMiddleware(MessageMiddleware(view)))
    chain(RequestFactory().post(path, b"{}", content_type="application/json"))
    assert seen == {"session": made, "user": made, "messages": made}


def test_a_delivery_runs_in_the_sites_language_whatever_the_thread_served_before(
    application: WSGIHandler, bot: FakeTelegramServer, memory_store: KVStore
) -> None:
    seen: list[str | None] = []

    def language_at_the_end(**kwargs: Any) -> None:
        seen.append(translation.get_language())

    call(application, "/admin/login/", method="GET", HTTP_ACCEPT_LANGUAGE="ru")
    assert translation.get_language() == "ru"  # the operator's page left its language here
    request_finished.connect(language_at_the_end)
    try:
        status, _, _ = deliver(application, group("hi"), HTTP_ACCEPT_LANGUAGE="ru")
    finally:
        request_finished.disconnect(language_at_the_end)
        translation.deactivate()
    assert status == 200
    assert seen == [settings.LANGUAGE_CODE]


def test_a_host_not_allowed_gets_400_and_nothing_is_claimed(
    application: WSGIHandler, bot: FakeTelegramServer, memory_store: KVStore
) -> None:
    status, _, _ = deliver(application, group("hello"), host="evil.example")
    assert status == 400
    assert list(memory_store.scan_all("upd:")) == []


@pytest.mark.parametrize(
    ("method", "secret", "expected"),
    [("POST", "wrong", 401), ("POST", "", 401), ("GET", WEBHOOK_SECRET, 405)],
)
def test_the_operations_own_checks_still_answer(
    application: WSGIHandler,
    bot: FakeTelegramServer,
    memory_store: KVStore,
    method: str,
    secret: str,
    expected: int,
) -> None:
    status, headers, content = call(
        application,
        WEBHOOK_PATH,
        method=method,
        body=json.dumps(group("hi")).encode(),
        HTTP_X_TELEGRAM_BOT_API_SECRET_TOKEN=secret,
    )
    assert status == expected
    assert json.loads(content)["ok"] is False
    assert headers["Content-Length"] == str(len(content))
    if expected == 405:
        assert headers["Allow"] == "POST"
    assert list(memory_store.scan_all("upd:")) == []


def test_a_bad_body_gets_400(application: WSGIHandler, bot: FakeTelegramServer) -> None:
    status, _, content = call(
        application,
        WEBHOOK_PATH,
        body=b'{"update_id": "seven"}',
        HTTP_X_TELEGRAM_BOT_API_SECRET_TOKEN=WEBHOOK_SECRET,
    )
    assert status == 400
    assert "not a Telegram Update" in json.loads(content)["error"]


@pytest.mark.parametrize("body", [None, b"{not json"])
def test_every_delivery_sends_the_request_signals_once(
    application: WSGIHandler,
    bot: FakeTelegramServer,
    memory_store: KVStore,
    body: bytes | None,
) -> None:
    """So Django's own receivers run for the webhook as for any request: connections checked
    and closed by their rules, the query log emptied, the caches closed, the URLconf reset."""
    seen: list[str] = []

    def started(**kwargs: Any) -> None:
        seen.append("started")

    def finished(**kwargs: Any) -> None:
        seen.append("finished")

    request_started.connect(started)
    request_finished.connect(finished)
    try:
        if body is None:
            status, _, _ = deliver(application, group("hi"))
        else:
            status, _, _ = call(
                application,
                WEBHOOK_PATH,
                body=body,
                HTTP_X_TELEGRAM_BOT_API_SECRET_TOKEN=WEBHOOK_SECRET,
            )
    finally:
        request_started.disconnect(started)
        request_finished.disconnect(finished)
    assert status == (200 if body is None else 400)
    assert seen == ["started", "finished"]


def test_the_web_processes_application_is_djangos_handler_with_the_imports_frozen(
    tmp_path: Path,
) -> None:
    """``config.wsgi:application``, as the servers load it: Django's WSGIHandler, every view
    imported and moved out of the collector's sight (a full collection walks a frozen
    process's few new objects, not Django's)."""
    script = (
        "import gc, sys, config.wsgi as w\n"
        "from django.core.handlers.wsgi import WSGIHandler\n"
        "print(type(w.application) is WSGIHandler, 'telegram_bot.transport.webhook' in "
        "sys.modules, gc.get_freeze_count() > 10000)\n"
    )
    env = web_env(tmp_path, 8000, DJANGO_ALLOWED_HOSTS="localhost")
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={**env, "PYTHONPATH": str(ROOT), "PATH": os.environ.get("PATH", "")},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.stdout.split() == ["True", "True", "True"], done.stderr[-2000:]


class _Unread:
    """A request body that must not be read."""

    def read(self, *args: Any) -> bytes:
        raise AssertionError("the body was read")

    readline = read


@pytest.mark.parametrize(
    ("declared", "secret", "read"),
    [
        (5 * 1024 * 1024, WEBHOOK_SECRET, False),  # over the discard limit: left to the server
        (4 * 1024 * 1024, WEBHOOK_SECRET, True),  # 413, read and dropped
        (1000, "wrong", True),  # 401, read and dropped
    ],
)
def test_a_refused_body_is_read_and_dropped_up_to_a_bound(
    application: WSGIHandler, bot: FakeTelegramServer, declared: int, secret: str, read: bool
) -> None:
    body = FakePayload(b" " * declared) if read else _Unread()
    environ = RequestFactory()._base_environ(
        PATH_INFO=WEBHOOK_PATH,
        REQUEST_METHOD="POST",
        CONTENT_TYPE="application/json",
        CONTENT_LENGTH=str(declared),
        HTTP_X_TELEGRAM_BOT_API_SECRET_TOKEN=secret,
        **{"wsgi.input": body},
    )
    answer: dict[str, str] = {}
    chunks = application(environ, lambda status, headers: answer.update(status=status))
    chunks.close()  # type: ignore[attr-defined]
    assert answer["status"].startswith("413" if secret == WEBHOOK_SECRET else "401")
    if read:
        assert body.read() == b""  # nothing of it left


@pytest.mark.parametrize(("path", "made"), [(WEBHOOK_PATH, False), ("/admin/login/", True)])
def test_the_browser_middleware_steps_aside_under_asgi_too(path: str, made: bool) -> None:
    import asyncio

    from django.test import AsyncRequestFactory

    from telegram_bot.transport.middleware import AuthenticationMiddleware, SessionMiddleware

    seen: dict[str, bool] = {}

    async def view(request: HttpRequest) -> HttpResponse:
        seen["session"] = hasattr(request, "session")
        seen["user"] = hasattr(request, "user")
        return HttpResponse()

    chain = SessionMiddleware(AuthenticationMiddleware(view))
    request = AsyncRequestFactory().post(path, b"{}", content_type="application/json")
    asyncio.run(chain(request))
    assert seen == {"session": made, "user": made}


def test_the_admin_sites_middleware_is_checked_through_the_wrappers(settings: Any) -> None:
    from telegram_bot.ops.checks import browser_middleware_configured

    assert browser_middleware_configured(None) == []
    settings.MIDDLEWARE = [
        m for m in settings.MIDDLEWARE if m != "telegram_bot.transport.middleware.SessionMiddleware"
    ]
    (error,) = browser_middleware_configured(None)
    assert error.id == "telegram_bot.E002"
    assert "django.contrib.sessions.middleware.SessionMiddleware" in error.msg
