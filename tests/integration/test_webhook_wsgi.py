"""The web worker's WSGI application (``telegram_bot/transport/wsgi.py``): Telegram's deliveries
pass only the request id and the host check; every other path keeps the site's middleware.

Called as gunicorn calls it (an environ and ``start_response``), since the test client runs
its own handler with the full middleware."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.http import HttpRequest, HttpResponse
from django.test.client import FakePayload, RequestFactory
from django.urls import URLResolver, path

from stats.models import DailyUserStat
from telegram_bot.state import KVStore
from telegram_bot.transport.wsgi import WEBHOOK_PATH, Application
from tests.builders import make_message_update
from tests.conftest import WEBHOOK_SECRET
from tests.fakes.telegram import FakeTelegramServer

pytestmark = pytest.mark.django_db
CHAT = -100777


@pytest.fixture(scope="module")
def application() -> Application:
    return Application()


def call(
    application: Application,
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


def deliver(application: Application, update: dict[str, Any], **headers: str) -> Any:
    headers.setdefault("HTTP_X_TELEGRAM_BOT_API_SECRET_TOKEN", WEBHOOK_SECRET)
    return call(application, WEBHOOK_PATH, body=json.dumps(update).encode(), **headers)


def test_the_path_is_the_webhook_operations(application: Application) -> None:
    from django.urls import reverse

    assert reverse("telegram:telegram_webhook") == WEBHOOK_PATH


def test_a_group_message_is_counted_past_the_browser_middleware(
    application: Application, bot: FakeTelegramServer, memory_store: KVStore
) -> None:
    update = group("two words")
    status, headers, content = deliver(application, update, HTTP_X_REQUEST_ID="req-42")
    assert status == 200
    assert json.loads(content) == {"ok": True, "outcome": "processed"}
    assert headers["X-Request-ID"] == "req-42"  # the request id still runs
    assert headers["Content-Length"] == str(len(content))  # not sent chunked
    # What the browser middleware adds to every answer is not on it.
    assert "X-Frame-Options" not in headers
    assert "Vary" not in headers
    assert "Set-Cookie" not in headers
    row = DailyUserStat.objects.get(chat_id=CHAT)
    assert (row.message_count, row.word_count) == (1, 2)

    status, _, content = deliver(application, update)
    assert (status, json.loads(content)["outcome"]) == (200, "duplicate")


def _teapot(request: HttpRequest) -> HttpResponse:
    return HttpResponse(b"teapot", status=418)


# A URLconf of its own (this module) for the test below.
urlpatterns = [path(WEBHOOK_PATH.lstrip("/"), _teapot)]


def test_the_webhook_path_is_resolved_once_per_urlconf(
    application: Application,
    bot: FakeTelegramServer,
    memory_store: KVStore,
    monkeypatch: pytest.MonkeyPatch,
    settings: Any,
) -> None:
    resolved: list[str] = []
    resolve = URLResolver.resolve

    def counted(self: URLResolver, path: str) -> Any:
        resolved.append(path)
        return resolve(self, path)

    monkeypatch.setattr(URLResolver, "resolve", counted)
    for n in range(3):
        status, _, content = deliver(application, group(f"message {n}"))
        assert (status, json.loads(content)["outcome"]) == (200, "processed")
    assert resolved.count(WEBHOOK_PATH) <= 1  # the site's patterns walked once, not a request

    settings.ROOT_URLCONF = __name__  # another URLconf: the path is resolved in it
    status, _, content = call(application, WEBHOOK_PATH, body=b"{}")
    assert (status, content) == (418, b"teapot")


def test_other_paths_keep_the_sites_middleware(application: Application) -> None:
    status, headers, _ = call(application, "/admin/login/", method="GET")
    assert status == 200
    assert headers["X-Frame-Options"] == "DENY"
    assert "X-Request-ID" in headers
    assert "csrftoken" in headers.get("Set-Cookie", "")


def test_a_host_not_allowed_gets_400_and_nothing_is_claimed(
    application: Application, bot: FakeTelegramServer, memory_store: KVStore
) -> None:
    update = group("hello")
    status, _, _ = deliver(application, update, host="evil.example")
    assert status == 400
    assert list(memory_store.scan_all("upd:")) == []


@pytest.mark.parametrize(
    ("method", "secret", "expected"),
    [("POST", "wrong", 401), ("POST", "", 401), ("GET", WEBHOOK_SECRET, 405)],
)
def test_the_operations_own_checks_still_answer(
    application: Application,
    bot: FakeTelegramServer,
    memory_store: KVStore,
    method: str,
    secret: str,
    expected: int,
) -> None:
    body = json.dumps(group("hi"))
    status, headers, content = call(
        application,
        WEBHOOK_PATH,
        method=method,
        body=body.encode(),
        HTTP_X_TELEGRAM_BOT_API_SECRET_TOKEN=secret,
    )
    assert status == expected
    assert json.loads(content)["ok"] is False
    if expected == 405:
        assert headers["Allow"] == "POST"
    assert list(memory_store.scan_all("upd:")) == []


def test_a_bad_body_gets_400(application: Application, bot: FakeTelegramServer) -> None:
    status, _, content = call(
        application,
        WEBHOOK_PATH,
        body=b'{"update_id": "seven"}',
        HTTP_X_TELEGRAM_BOT_API_SECRET_TOKEN=WEBHOOK_SECRET,
    )
    assert status == 400
    assert "not a Telegram Update" in json.loads(content)["error"]


def test_the_request_signals_are_sent_so_connections_follow_their_rules(
    application: Application, bot: FakeTelegramServer, memory_store: KVStore
) -> None:
    seen: list[str] = []

    def started(**kwargs: Any) -> None:
        seen.append("started")

    def finished(**kwargs: Any) -> None:
        seen.append("finished")

    request_started.connect(started)
    request_finished.connect(finished)
    try:
        deliver(application, group("hi"))
    finally:
        request_started.disconnect(started)
        request_finished.disconnect(finished)
    assert seen == ["started", "finished"]
