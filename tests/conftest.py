"""Suite-wide fixtures: the network guard, KV backends, and the backend report."""

from __future__ import annotations

import ipaddress
import os
import socket
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.utils import translation

from stats import write_behind
from telegram_bot import languages
from telegram_bot.state import KVStore, open_store
from tests.fakes.telegram import FakeTelegramServer
from tests.midnight import wait_for_one_day

pytest_plugins = ["tests.fakes.fixtures"]

REDIS_URL = os.environ.get("REDIS_URL", "")
SKIPPED_BACKENDS: set[str] = set()


# A developer's .env never reaches the suite, nor the manage.py processes that tests start.
os.environ["ENV_FILE"] = os.devnull


def pytest_configure(config: pytest.Config) -> None:
    """Before collection (module-level dates) and before xdist starts its workers."""
    if not hasattr(config, "workerinput"):
        wait_for_one_day()


# --- network guard ------------------------------------------------------------------------------
_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _check_address(address: Any) -> None:
    if isinstance(address, tuple):
        host = address[0]
        try:
            if ipaddress.ip_address(host).is_loopback:
                return
        except ValueError:
            if host == "localhost":
                return
        raise RuntimeError(f"test tried to reach the network: {host}")


def _guarded_connect(self: socket.socket, address: Any) -> None:
    _check_address(address)
    _real_connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: Any) -> int:
    _check_address(address)
    return _real_connect_ex(self, address)


@pytest.fixture(autouse=True, scope="session")
def _block_network() -> Iterator[None]:
    """Fail any test that opens a connection to anything but loopback or a unix socket."""
    socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
    socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign]
    yield
    socket.socket.connect = _real_connect  # type: ignore[method-assign]
    socket.socket.connect_ex = _real_connect_ex  # type: ignore[method-assign]


# --- languages ----------------------------------------------------------------------------------
@pytest.fixture(autouse=True)
def _forget_languages() -> Iterator[None]:
    """The process caches of chat and user languages outlive a test's rows and keys."""
    languages.forget_all()
    yield
    languages.forget_all()


@pytest.fixture(autouse=True)
def _operators_language_ends_with_the_test() -> Iterator[None]:
    """Django's LocaleMiddleware leaves the language of a request's Accept-Language active in
    the thread: a test that asks for a Russian page would run the next test in Russian."""
    yield
    translation.deactivate()


@pytest.fixture(autouse=True)
def _forget_listed_admins() -> Iterator[None]:
    """The panel's process cache of BotAdmin rows outlives a test's rows (a rollback sends
    no post_delete)."""
    from telegram_bot import admins

    admins.forget_listed_admins()
    yield
    admins.forget_listed_admins()


@pytest.fixture(autouse=True)
def _end_write_behind() -> Iterator[None]:
    """The statistics' write-behind (stats/write_behind.py) keeps a connection and a
    transaction per process: a test ends them, having written what they hold."""
    yield
    write_behind.shutdown()


@pytest.fixture(autouse=True)
def _forget_moderation_settings() -> Iterator[None]:
    """Moderation's process cache of chat settings outlives a test's rows: a chat's log
    channel from one test would receive the next tests' audit entries of that chat."""
    from moderation import conf

    yield
    conf.forget()


# --- KV backends --------------------------------------------------------------------------------
KV_BACKENDS = ["memory", "db", "redis"]
SHARED_KV_BACKENDS = ["db", "redis"]  # reachable from several processes


def make_store(request: pytest.FixtureRequest, backend: str) -> Iterator[KVStore]:
    prefix = f"t{uuid.uuid4().hex[:12]}:"
    if backend == "memory":
        yield open_store("memory://")
        return
    if backend == "db":
        # The django_db mark was added at collection (pytest_collection_modifyitems below):
        # requesting the database lazily from here would not switch to the test database.
        yield open_store("db://")
        return
    if not REDIS_URL:
        SKIPPED_BACKENDS.add("redis")
        pytest.skip("Redis backend: REDIS_URL not set")
    store = open_store(REDIS_URL, prefix=prefix)
    try:
        yield store
    finally:
        client = store.client  # type: ignore[attr-defined]
        for key in client.scan_iter(match=f"{prefix}*", count=500):
            client.delete(key)
        store.close()


@pytest.fixture(params=KV_BACKENDS)
def kv(request: pytest.FixtureRequest) -> Iterator[KVStore]:
    """A fresh, isolated store on each backend in turn."""
    yield from make_store(request, request.param)


@pytest.fixture(params=SHARED_KV_BACKENDS)
def shared_kv(request: pytest.FixtureRequest) -> Iterator[KVStore]:
    """A store on each backend that several processes can share."""
    yield from make_store(request, request.param)


@pytest.fixture
def memory_store() -> Iterator[KVStore]:
    from telegram_bot.state import override_store

    store = open_store("memory://")
    with override_store(store):
        yield store


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Give every test that runs on the database KV backend a transactional test database."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec and "db" in (callspec.params.get("kv"), callspec.params.get("shared_kv")):
            item.add_marker(pytest.mark.django_db(transaction=True))


# --- the bot against the fake Bot API ---------------------------------------------------------
OWNER_ID = 1000
WEBHOOK_SECRET = "test-webhook-secret"


def wire_bot(settings: Any, fake: FakeTelegramServer) -> FakeTelegramServer:
    """Point the product at the fake Bot API with the test owner and webhook secret."""
    settings.TELEGRAM_API_BASE_URL = fake.base_url
    settings.OWNER_TELEGRAM_ID = OWNER_ID
    settings.ADMIN_TELEGRAM_IDS = []
    settings.ALLOWED_CHAT_IDS = []
    settings.TELEGRAM_WEBHOOK_SECRET = WEBHOOK_SECRET
    return fake


@pytest.fixture
def bot(
    fake_telegram: FakeTelegramServer, settings: Any, db: None, memory_store: KVStore
) -> FakeTelegramServer:
    """The product wired to the fake Bot API server, a fresh KV store and the test database.

    ``bot`` is the fake server: inspect ``bot.calls_to("sendMessage")``, inject faults.
    """
    return wire_bot(settings, fake_telegram)


@pytest.fixture
def live_bot(
    fake_telegram: FakeTelegramServer, settings: Any, memory_store: KVStore
) -> FakeTelegramServer:
    """As ``bot``, for tests against pytest-django's ``live_server`` (which mark themselves
    ``django_db(transaction=True)``)."""
    return wire_bot(settings, fake_telegram)


@pytest.fixture
def post_update(client: Any, request: pytest.FixtureRequest, settings: Any) -> Any:
    """POST an Update to the webhook like Telegram does; returns the response. A 200 answer
    that names a Bot API call (the webhook reply) is made on the fake Bot API, as Telegram
    makes it; the outcome is in the answer's ``X-Update-Outcome`` header."""
    import json

    def post(update: dict[str, Any], *, secret: str | None = WEBHOOK_SECRET) -> Any:
        headers = {} if secret is None else {"HTTP_X_TELEGRAM_BOT_API_SECRET_TOKEN": secret}
        response = client.post(
            "/telegram/webhook", data=json.dumps(update), content_type="application/json", **headers
        )
        # The answer is out; the message's database add lands with its epoch, a few
        # milliseconds later: the tests read the database after that.
        write_behind.flush()
        if response.status_code == 200 and b'"method"' in response.content:
            fake = request.getfixturevalue("fake_telegram")
            fake.webhook_reply(settings.TELEGRAM_BOT_TOKEN, response.content)
        return response

    return post


# --- report -------------------------------------------------------------------------------------
def pytest_report_header(config: pytest.Config) -> list[str]:
    database = (
        "PostgreSQL" if os.environ.get("DATABASE_URL", "").startswith("postgres") else "SQLite"
    )
    redis_state = f"Redis at {REDIS_URL.split('@')[-1]}" if REDIS_URL else "not set"
    return [f"backends: database={database}, REDIS_URL={redis_state}"]


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """How many tests were skipped and what to install or set to run them; pytest prints the
    SKIPPED lines, each with its reason, after this."""
    skipped = terminalreporter.stats.get("skipped", [])
    if not skipped:
        terminalreporter.write_line("tests skipped: none")
        return
    terminalreporter.write_line(
        f"tests skipped: {len(skipped)} (the SKIPPED lines below give each reason)"
    )
    for line in skip_advice([skip_reason(report) for report in skipped]):
        terminalreporter.write_line(f"  {line}")


def skip_reason(report: Any) -> str:
    longrepr = getattr(report, "longrepr", None)
    return str(longrepr[2]) if isinstance(longrepr, tuple) and len(longrepr) == 3 else ""


def skip_advice(reasons: list[str]) -> list[str]:
    """One line of advice per kind of skip: a browser test needs Chromium, a backend test
    PostgreSQL or Redis, others a tool their reason names."""
    browser = sum("chromium" in reason.lower() for reason in reasons)
    backend = sum(
        "chromium" not in reason.lower()
        and any(word in reason for word in ("DATABASE_URL", "REDIS_URL", "PostgreSQL", "SQLite"))
        for reason in reasons
    )
    other = len(reasons) - browser - backend
    advice = []
    if backend:
        advice.append(
            f"{backend} need PostgreSQL or Redis: set DATABASE_URL=postgres://... and "
            "REDIS_URL=redis://... (README, 'The two commands')"
        )
    if browser:
        advice.append(f"{browser} need Chromium: apt-get install chromium")
    if other:
        advice.append(f"{other} need a tool their reason names (make, redis-server, pg_dump...)")
    return advice


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """With REQUIRE_ALL_BACKENDS=1 (CI) a skipped test fails the run."""
    if os.environ.get("REQUIRE_ALL_BACKENDS") != "1":
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter else []
    if skipped and session.exitstatus == 0:
        session.exitstatus = 1
        if reporter:
            reporter.write_line(f"REQUIRE_ALL_BACKENDS=1 but {len(skipped)} tests were skipped")
