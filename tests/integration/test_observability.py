"""Metrics, structured logs and quiet expected 503s, through the real webhook path against the
fake Bot API."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone
from django.utils.module_loading import import_string
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from config.metrics import registry
from telegram_bot import log_context, metrics
from telegram_bot.jobs.models import Job, JobStatus
from telegram_bot.log_context import ContextFilter
from telegram_bot.redaction import TokenRedactingFilter
from telegram_bot.state import KVStore, open_store, override_store
from tests.builders import make_message_update
from tests.fakes.telegram import FakeTelegramServer

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "metrics-token-for-tests-0123456789"


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def scrape(client: Client) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=")
    values = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for s in family.samples:
            values[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return values


@pytest.fixture
def token(settings: Any) -> str:
    settings.METRICS_TOKEN = TOKEN
    return TOKEN


# --- /metrics access ---------------------------------------------------------------------------
@pytest.mark.django_db
def test_metrics_do_not_exist_without_a_token(client: Client, settings: Any) -> None:
    settings.METRICS_TOKEN = ""
    assert client.get("/metrics").status_code == 404


@pytest.mark.django_db
def test_metrics_need_the_bearer_token(client: Client, token: str) -> None:
    assert client.get("/metrics").status_code == 401
    wrong = client.get("/metrics", HTTP_AUTHORIZATION="Bearer not-the-token-at-all-000")
    assert wrong.status_code == 401
    assert wrong["WWW-Authenticate"].startswith("Bearer")
    assert client.post("/metrics", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 405


# --- the update path ---------------------------------------------------------------------------
def test_updates_are_counted_by_outcome_and_timed(
    bot: FakeTelegramServer, post_update: Any, client: Client, token: str
) -> None:
    processed = sample("tgcp_updates_total", outcome="processed")
    duplicate = sample("tgcp_updates_total", outcome="duplicate")
    timed_200 = sample("tgcp_webhook_request_seconds_count", status="200")
    sends = sample("tgcp_telegram_api_calls_total", method="sendMessage", result="ok")
    update = make_message_update("/start", chat_id=5, user_id=5)
    post_update(update)
    post_update(update)
    values = scrape(client)
    assert values[("tgcp_updates_total", (("outcome", "processed"),))] == processed + 1
    assert values[("tgcp_updates_total", (("outcome", "duplicate"),))] == duplicate + 1
    assert values[("tgcp_webhook_request_seconds_count", (("status", "200"),))] == timed_200 + 2
    key = ("tgcp_telegram_api_calls_total", (("method", "sendMessage"), ("result", "ok")))
    assert values[key] == sends + 1


def test_failed_telegram_calls_and_handler_errors_are_counted(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    errors = sample("tgcp_handler_errors_total", app="telegram_bot")
    bad = sample("tgcp_telegram_api_calls_total", method="sendMessage", result="client_error")
    dead = sample("tgcp_updates_total", outcome="dead_letter")
    bot.fail_next("sendMessage", status=400, description="Bad Request: message text is empty")
    assert post_update(make_message_update("/start", chat_id=5, user_id=5))["X-Update-Outcome"] == (
        "dead_letter"
    )
    assert sample("tgcp_handler_errors_total", app="telegram_bot") == errors + 1
    assert sample("tgcp_updates_total", outcome="dead_letter") == dead + 1
    assert (
        sample("tgcp_telegram_api_calls_total", method="sendMessage", result="client_error")
        == bad + 1
    )


def test_rate_limited_and_network_results(bot: FakeTelegramServer) -> None:
    from telegram_bot.bot import get_client
    from telegram_bot.errors import TelegramApiError

    limited = sample("tgcp_telegram_api_calls_total", method="getMe", result="rate_limited")
    network = sample("tgcp_telegram_api_calls_total", method="getMe", result="network")
    bot.fail_next("getMe", status=429, retry_after=1)
    with pytest.raises(TelegramApiError):
        get_client().call("getMe")
    bot.fail_next("getMe", drop_connection=True)
    with pytest.raises(TelegramApiError):
        get_client().call("getMe")
    assert sample("tgcp_telegram_api_calls_total", method="getMe", result="rate_limited") == (
        limited + 1
    )
    assert sample("tgcp_telegram_api_calls_total", method="getMe", result="network") == network + 1


def test_a_feature_apps_error_is_counted_under_that_app() -> None:
    """The deepest frame in a feature app names it, even when the core raised below it."""
    from telegram_bot.errors import TelegramApiError

    def core_call() -> None:
        raise TelegramApiError("sendMessage", status=400, description="x")

    namespace: dict[str, Any] = {"__name__": "support.handlers", "core_call": core_call}
    exec("def handler():\n    core_call()\n", namespace)  # noqa: S102 - a frame in "support"
    with pytest.raises(TelegramApiError) as caught:
        namespace["handler"]()
    before = sample("tgcp_handler_errors_total", app="support")
    metrics.handler_failed(caught.value)
    assert sample("tgcp_handler_errors_total", app="support") == before + 1
    assert metrics.app_of(None) == "unknown"


# --- expected 503s: one WARNING, no ERROR django.request -----------------------------------------
def test_in_progress_is_one_warning_line(
    bot: FakeTelegramServer,
    post_update: Any,
    memory_store: KVStore,
    caplog: pytest.LogCaptureFixture,
) -> None:
    update = make_message_update("/start", chat_id=5, user_id=5)
    memory_store.set(f"upd:{update['update_id']}", {"s": "claim", "o": "other"}, ttl_ms=60_000)
    with caplog.at_level(logging.INFO):
        assert post_update(update).status_code == 503
    records = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [(r.levelname, r.name) for r in records] == [
        ("WARNING", "telegram_bot.transport.webhook")
    ]
    assert "in_progress" in records[0].getMessage()


def test_unavailable_is_one_warning_line(
    bot: FakeTelegramServer, post_update: Any, caplog: pytest.LogCaptureFixture
) -> None:
    update = make_message_update("/start", chat_id=5, user_id=5)
    with (
        override_store(open_store("redis://127.0.0.1:1/0")),
        caplog.at_level(logging.INFO),
    ):
        assert post_update(update).status_code == 503
    records = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.levelname for r in records] == ["WARNING"], [r.getMessage() for r in records]
    assert "unavailable" in records[0].getMessage()


@pytest.mark.django_db
def test_readyz_down_is_not_an_error_line(client: Client, caplog: pytest.LogCaptureFixture) -> None:
    with override_store(open_store("redis://127.0.0.1:1/0")), caplog.at_level(logging.INFO):
        assert client.get("/readyz").status_code == 503
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


# --- structured logs ------------------------------------------------------------------------------
def json_formatter(settings: Any) -> logging.Formatter:
    """The formatter LOG_FORMAT=json configures (python-json-logger)."""
    spec = dict(settings.LOGGING["formatters"]["json"])
    formatter: logging.Formatter = import_string(spec.pop("()"))(**spec)
    return formatter


def test_a_json_line_has_the_fields_and_a_redacted_traceback(settings: Any) -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(TokenRedactingFilter(secrets=[settings.TELEGRAM_BOT_TOKEN]))
    handler.addFilter(ContextFilter())
    handler.setFormatter(json_formatter(settings))
    logger = logging.getLogger("tests.json")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("plain: %s", "Заявка")
        try:
            raise RuntimeError(f"call to /bot{settings.TELEGRAM_BOT_TOKEN}/getMe failed")
        except RuntimeError:
            logger.exception("failed")
    finally:
        logger.removeHandler(handler)
    plain, failed = (json.loads(line) for line in stream.getvalue().splitlines())
    fields = {"time", "level", "logger", "message", "request_id", "update_id", "process"}
    assert set(plain) == fields
    assert (plain["level"], plain["logger"], plain["message"]) == (
        "WARNING",
        "tests.json",
        "plain: Заявка",
    )
    assert "Заявка" in stream.getvalue()  # written as it is, not \u-escaped
    assert plain["time"].startswith(str(timezone.now().year))
    assert plain["request_id"] is None and plain["update_id"] is None
    assert set(failed) == fields | {"exc"}
    assert "RuntimeError: call to /bot[REDACTED]/getMe failed" in failed["exc"]
    assert settings.TELEGRAM_BOT_TOKEN not in stream.getvalue()


@pytest.fixture
def json_log(settings: Any) -> Iterator[io.StringIO]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(TokenRedactingFilter(secrets=[settings.TELEGRAM_BOT_TOKEN]))
    handler.addFilter(ContextFilter())
    handler.setFormatter(json_formatter(settings))
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield stream
    finally:
        root.removeHandler(handler)


def test_json_lines_carry_the_request_and_update_ids(
    bot: FakeTelegramServer, client: Client, json_log: io.StringIO, settings: Any
) -> None:
    bot.fail_next("sendMessage", status=400, description="Bad Request: message text is empty")
    update = make_message_update("/start", chat_id=5, user_id=5)
    response = client.post(
        "/telegram/webhook",
        data=json.dumps(update),
        content_type="application/json",
        HTTP_X_TELEGRAM_BOT_API_SECRET_TOKEN=settings.TELEGRAM_WEBHOOK_SECRET,
        HTTP_X_REQUEST_ID="req-42",
    )
    assert response["X-Request-ID"] == "req-42"
    lines = [json.loads(line) for line in json_log.getvalue().splitlines()]
    failed = [line for line in lines if "handler failed" in line["message"]]
    assert len(failed) == 1
    assert failed[0]["level"] == "ERROR"
    assert failed[0]["request_id"] == "req-42"
    assert failed[0]["update_id"] == update["update_id"]
    assert settings.TELEGRAM_BOT_TOKEN not in json_log.getvalue()


@pytest.mark.django_db
def test_a_bad_request_id_is_replaced(client: Client) -> None:
    response = client.get("/healthz", HTTP_X_REQUEST_ID="has spaces and\nnewline")
    assert len(response["X-Request-ID"]) == 32
    assert " " not in response["X-Request-ID"]


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_new_request_ids_are_unique_and_a_forked_process_never_repeats_its_parents() -> None:
    ids = [log_context.new_request_id() for _ in range(1000)]
    assert len(set(ids)) == 1000
    assert all(re.fullmatch(r"[0-9a-f]{32}", rid) for rid in ids)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its first ids
        os.write(write, " ".join(log_context.new_request_id() for _ in range(3)).encode())
        os._exit(0)
    os.waitpid(pid, 0)
    child = os.read(read, 4096).decode().split()
    ours = [log_context.new_request_id() for _ in range(3)]
    assert len(child) == 3 and not set(child) & set(ids + ours)
    assert child[0][:16] != ours[0][:16]  # its own random half


def run_shell(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("LOG_LEVEL",)}
    clean.update({"DJANGO_SETTINGS_MODULE": "config.settings_test", **env})
    return subprocess.run(
        [sys.executable, "manage.py", "shell", "-v", "0", "-c", code],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_log_format_json_from_the_environment() -> None:
    token = "123456789:AAAbbbCCCdddEEEfffGGGhhhIIIjjjKKKlll"
    result = run_shell(
        f"import logging; logging.getLogger('ops').warning('token %s here', '{token}')",
        LOG_FORMAT="json",
        LOG_LEVEL="INFO",
    )
    assert result.returncode == 0, result.stderr
    line = json.loads(result.stderr.strip().splitlines()[-1])
    assert line["logger"] == "ops"
    assert line["level"] == "WARNING"
    assert line["message"] == "token [REDACTED] here"
    assert {"time", "request_id", "update_id"} <= line.keys()


def test_django_q_info_lines_are_quiet_by_default() -> None:
    code = "import logging; print(logging.getLogger('django-q').isEnabledFor(logging.INFO))"
    assert run_shell(code, LOG_LEVEL="INFO").stdout.strip() == "False"
    assert run_shell(code, LOG_LEVEL="INFO", Q_LOG_LEVEL="INFO").stdout.strip() == "True"


# --- state read at scrape time -----------------------------------------------------------------
@pytest.mark.django_db
def test_jobs_by_status_and_age(client: Client, token: str) -> None:
    now = timezone.now()
    Job.objects.create(kind="core.noop", next_attempt=now - timedelta(seconds=120))
    Job.objects.create(kind="core.noop", next_attempt=now + timedelta(hours=1))
    Job.objects.create(
        kind="core.noop", status=JobStatus.RUNNING, started_at=now - timedelta(seconds=30)
    )
    Job.objects.create(kind="core.noop", status=JobStatus.FAILED)
    values = scrape(client)
    assert values[("tgcp_jobs", (("status", "queued"),))] == 2
    assert values[("tgcp_jobs", (("status", "running"),))] == 1
    assert values[("tgcp_jobs", (("status", "failed"),))] == 1
    assert values[("tgcp_jobs", (("status", "succeeded"),))] == 0
    assert 120 <= values[("tgcp_jobs_oldest_age_seconds", (("status", "queued"),))] < 600
    assert 30 <= values[("tgcp_jobs_oldest_age_seconds", (("status", "running"),))] < 600


@pytest.mark.django_db
def test_backfill_progress(client: Client, token: str) -> None:
    from stats.backfill import backfill_reset

    values = scrape(client)
    assert values[("tgcp_backfill_running", ())] == 0
    assert values[("tgcp_backfill_keys_done", ())] == 0
    backfill_reset()
    assert ("tgcp_backfill_last_finished_timestamp_seconds", ()) in scrape(client)


@pytest.mark.django_db
def test_worker_seen_in_readyz_and_metrics(client: Client, token: str) -> None:
    from django_q.models import Task

    body = client.get("/readyz").json()
    assert body["worker"]["seen_recently"] is False
    assert body["worker"]["last_task_seconds_ago"] is None
    assert scrape(client)[("tgcp_worker_last_task_age_seconds", ())] == -1
    now = timezone.now()
    Task.objects.create(
        id="a" * 32, name="t", func="math.floor", started=now, stopped=now, success=True
    )
    body = client.get("/readyz").json()
    assert body["worker"]["seen_recently"] is True
    assert 0 <= scrape(client)[("tgcp_worker_last_task_age_seconds", ())] < 60
    Task.objects.update(stopped=now - timedelta(hours=1))
    assert client.get("/readyz").json()["worker"]["seen_recently"] is False


# --- several processes -------------------------------------------------------------------------
@pytest.mark.django_db
def test_counts_of_several_processes_are_added_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What gunicorn's and the worker's processes do with PROMETHEUS_MULTIPROC_DIR set."""
    code = (
        "from telegram_bot import metrics; "
        "metrics.TELEGRAM_CALLS.labels('sendMessage', 'ok').inc(3)"
    )
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    for _ in range(2):
        subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True, timeout=60)
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    values = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in registry().collect()
        for s in family.samples
    }
    key = ("tgcp_telegram_api_calls_total", (("method", "sendMessage"), ("result", "ok")))
    assert values[key] == 6
