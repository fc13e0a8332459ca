"""The web worker's WSGI application (``telegram_bot/transport/wsgi.py``): Telegram's deliveries
pass only the request id and the host check; every other path keeps the site's middleware.

Called as gunicorn calls it (an environ and ``start_response``), since the test client runs
its own handler with the full middleware."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.cache import caches
from django.core.cache.backends.locmem import LocMemCache
from django.core.signals import request_finished, request_started
from django.db import close_old_connections, connection
from django.http import HttpRequest, HttpResponse
from django.test.client import FakePayload, RequestFactory
from django.urls import URLResolver, get_urlconf, path, set_urlconf

from stats.models import DailyUserStat
from telegram_bot.state import KVStore
from telegram_bot.transport import lifecycle
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


class _Calls:
    """What a request's start and end did: the signals sent, the connection checks made."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.sent: list[str] = []
        self.checks = 0
        for name, signal in (("started", request_started), ("finished", request_finished)):
            original = signal.send

            def send(*args: Any, _name: str = name, _send: Any = original, **kwargs: Any) -> Any:
                self.sent.append(_name)
                return _send(*args, **kwargs)

            monkeypatch.setattr(signal, "send", send)  # the receivers stay as they are

        def check() -> None:  # the test's transaction is not Django's to close
            self.checks += 1

        monkeypatch.setattr(connection, "close_if_unusable_or_obsolete", check)


def serve(application: Application, path: str, body: bytes) -> tuple[int, bytes]:
    """As gunicorn calls the application, with the request signals' receivers untouched."""
    environ = RequestFactory()._base_environ(
        PATH_INFO=path,
        REQUEST_METHOD="POST",
        CONTENT_TYPE="application/json",
        CONTENT_LENGTH=str(len(body)),
        HTTP_X_TELEGRAM_BOT_API_SECRET_TOKEN=WEBHOOK_SECRET,
        **{"wsgi.input": FakePayload(body)},
    )
    answer: dict[str, int] = {}
    chunks = application(environ, lambda status, headers: answer.update(status=int(status[:3])))
    try:
        return answer["status"], b"".join(chunks)
    finally:
        chunks.close()  # type: ignore[attr-defined]


def test_the_webhook_starts_and_ends_its_request_as_djangos_receivers_without_the_signals(
    application: Application,
    bot: FakeTelegramServer,
    memory_store: KVStore,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert lifecycle.only_django_listens()  # as in a web worker
    calls = _Calls(monkeypatch)
    connection.ensure_connection()
    connection.queries_log.append({"sql": "SELECT 1", "time": "0.000"})
    set_urlconf("tests.integration.test_webhook_wsgi")
    status, content = serve(application, WEBHOOK_PATH, json.dumps(group("hi")).encode())
    assert (status, json.loads(content)["outcome"]) == (200, "processed")
    assert calls.sent == []  # no dispatch...
    assert calls.checks == 2  # ...but the connection checked at the start and at the end
    assert not connection.queries_log  # emptied at the start
    assert get_urlconf() is None  # reset at the end
    assert DailyUserStat.objects.get(chat_id=CHAT).message_count == 1

    status, _ = serve(application, "/healthz", b"")  # every other path: the signals
    assert calls.sent == ["started", "finished"]
    assert calls.checks == 4  # by Django's close_old_connections, twice


def test_a_refusal_of_the_webhook_ends_its_request_with_the_signal(
    application: Application, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _Calls(monkeypatch)
    status, _ = serve(application, WEBHOOK_PATH, b"{not json")
    assert status == 400
    assert calls.sent == ["finished"]  # its own answer, closed as Django closes one
    assert calls.checks == 2


def test_once_anything_else_listens_the_webhook_sends_the_signals(
    application: Application,
    bot: FakeTelegramServer,
    memory_store: KVStore,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    heard: list[str] = []

    def listener(**kwargs: Any) -> None:
        heard.append("finished")

    calls = _Calls(monkeypatch)
    request_finished.connect(listener)
    try:
        assert not lifecycle.only_django_listens()
        status, _ = serve(application, WEBHOOK_PATH, json.dumps(group("hi")).encode())
    finally:
        request_finished.disconnect(listener)
    assert status == 200
    assert calls.sent == ["started", "finished"] and heard == ["finished"]
    assert lifecycle.only_django_listens()
    # A receiver connected with a dispatch_uid, in place of one of Django's: its lookup key
    # starts with a string, beside the others' ids.
    request_started.disconnect(close_old_connections)
    request_started.connect(listener, dispatch_uid="a-listener")
    try:
        assert not lifecycle.only_django_listens()
        status, _ = serve(application, WEBHOOK_PATH, json.dumps(group("ho")).encode())
    finally:
        request_started.disconnect(dispatch_uid="a-listener")
        request_started.connect(close_old_connections)
    assert status == 200 and heard == ["finished", "finished"]
    assert lifecycle.only_django_listens()


class ClosingCache(LocMemCache):
    closed = 0

    def close(self, **kwargs: Any) -> None:
        ClosingCache.closed += 1


@pytest.mark.parametrize(
    ("config", "closes"),
    [
        ({"BACKEND": "django_redis.cache.RedisCache", "LOCATION": "redis://x"}, False),
        ({"BACKEND": "django_redis.cache.RedisCache", "OPTIONS": {"CLOSE_CONNECTION": True}}, True),
        ({"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}, False),
        ({"BACKEND": "django.core.cache.backends.db.DatabaseCache"}, False),
        ({"BACKEND": f"{__name__}.ClosingCache"}, True),
        ({"BACKEND": "django.core.cache.backends.memcached.PyMemcacheCache"}, True),
        ({"BACKEND": "no.such.Cache"}, True),  # not known: taken to close something
    ],
)
def test_which_caches_close_something_at_the_end_of_a_request(
    config: dict[str, Any], closes: bool
) -> None:
    assert lifecycle._closes(config) is closes


def test_a_cache_that_closes_something_is_closed_at_the_end_of_the_webhooks_request(
    application: Application,
    bot: FakeTelegramServer,
    memory_store: KVStore,
    monkeypatch: pytest.MonkeyPatch,
    settings: Any,
) -> None:
    assert lifecycle.caches_close_something() is False  # the test settings' local memory
    settings.DJANGO_REDIS_CLOSE_CONNECTION = True  # a setting changed: worked out again
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
        "closing": {"BACKEND": f"{__name__}.ClosingCache"},
    }
    caches["closing"].get("warm")  # made in this thread, as a view would
    before = ClosingCache.closed
    _Calls(monkeypatch)
    status, _ = serve(application, WEBHOOK_PATH, json.dumps(group("hi")).encode())
    assert status == 200
    assert ClosingCache.closed == before + 1
