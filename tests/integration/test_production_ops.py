"""check_production's operational checks against the fake Bot API: the smoke test (a signed test
update through the real webhook path, in-process and over HTTP), the worker heartbeat, the
documented backups; each passing, and failing for each reason, with the reason printed."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from telegram_bot.ops.production import check_results
from telegram_bot.scheduling import schedules_sync
from telegram_bot.state import KVStore, open_store, override_store
from tests.fakes.telegram import FakeTelegramServer

ROOT = Path(__file__).resolve().parents[2]


def result(name: str, **kwargs: Any) -> tuple[str | None, str]:
    (found,) = check_results(only=[name], **kwargs)
    return found.problem, found.detail


def finished_task(ago: timedelta) -> None:
    from django_q.models import Task

    stopped = timezone.now() - ago
    Task.objects.create(
        id=os.urandom(16).hex(), name="t", func="math.floor", started=stopped, stopped=stopped,
        success=True,
    )  # fmt: skip


@pytest.fixture
def production(bot: FakeTelegramServer, settings: Any) -> Any:
    settings.DEBUG = False
    settings.SECRET_KEY = "p" * 60
    settings.ALLOWED_HOSTS = ["bot.example.org"]
    settings.BACKUP_POLICY = "pg_dump nightly to /srv/backups, restore tested monthly"
    # Behind the TLS proxy, as documented (SECURITY.md): the security checks pass too.
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.SESSION_COOKIE_SECURE = settings.CSRF_COOKIE_SECURE = True
    settings.SECURE_HSTS_SECONDS = 31_536_000
    settings.SECURE_SSL_REDIRECT = True
    settings.TELEGRAM_WEBHOOK_SECRET = "w" * 32  # the gate's minimum
    schedules_sync()
    return settings


# --- smoke test -------------------------------------------------------------------------------
def test_smoke_test_passes_in_process_and_cleans_up(
    production: Any, bot: FakeTelegramServer, memory_store: KVStore
) -> None:
    problem, detail = result("smoke test")
    assert problem is None, problem
    assert "answered 200 (ignored)" in detail and "cleaned up" in detail
    update_id = re.search(r"update (\d+)", detail).group(1)  # type: ignore[union-attr]
    assert memory_store.get(f"upd:{update_id}") is None
    assert memory_store.get(f"dlq:{update_id}") is None
    assert bot.calls == []  # no feature acted on it, nothing went to Telegram


def test_smoke_test_fails_without_a_webhook_secret(production: Any) -> None:
    production.TELEGRAM_WEBHOOK_SECRET = ""
    assert "TELEGRAM_WEBHOOK_SECRET is not set" in (result("smoke test")[0] or "")


def test_smoke_test_fails_when_the_state_is_unreachable(production: Any) -> None:
    with override_store(open_store("redis://127.0.0.1:1/0")):
        problem, _ = result("smoke test")
    assert "answered 503 (unavailable)" in (problem or "")


@pytest.mark.django_db(transaction=True)
def test_smoke_test_over_http(
    live_server: Any, live_bot: FakeTelegramServer, settings: Any, memory_store: KVStore
) -> None:
    problem, detail = result("smoke test", base_url=live_server.url)
    assert problem is None, problem
    assert live_server.url in detail
    assert live_bot.calls == []


@pytest.mark.django_db(transaction=True)
def test_smoke_test_from_another_machine_that_disagrees(
    live_server: Any, live_bot: FakeTelegramServer, tmp_path: Path
) -> None:
    """``check_production --url`` run with another secret (the web node says 401), then with
    the right secret but another KV store (the web node's marker is not where it looks)."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env["DATABASE_URL"] = f"sqlite:///{tmp_path}/db.sqlite3"
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "-v", "0"], cwd=ROOT, env=env, check=True, timeout=120)
    command = [*manage, "check_production", "--only", "smoke test", "--url", live_server.url]
    other_secret = {**env, "TELEGRAM_WEBHOOK_SECRET": "not-the-servers-secret"}
    run = subprocess.run(command, cwd=ROOT, env=other_secret, capture_output=True, text=True)
    assert run.returncode == 1
    assert "answered 401 (unauthorized)" in run.stdout, run.stdout + run.stderr
    run = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    assert run.returncode == 1
    assert "not marked done in this KV store" in run.stdout, run.stdout + run.stderr


def test_smoke_test_names_an_unreachable_url(production: Any) -> None:
    problem, _ = result("smoke test", base_url="http://127.0.0.1:1")
    assert "could not reach http://127.0.0.1:1/telegram/webhook" in (problem or "")


# --- worker heartbeat, backups ---------------------------------------------------------------
def test_worker_heartbeat(production: Any) -> None:
    assert "no worker cluster finished a task" in (result("worker heartbeat")[0] or "")
    finished_task(timedelta(minutes=10))
    assert "no worker cluster finished a task" in (result("worker heartbeat")[0] or "")
    finished_task(timedelta(seconds=5))
    assert result("worker heartbeat")[0] is None


def test_backups_documented(production: Any) -> None:
    problem, detail = result("backups documented")
    assert problem is None
    assert "pg_dump nightly" in detail
    production.BACKUP_POLICY = ""
    assert "BACKUP_POLICY is not set" in (result("backups documented")[0] or "")


# --- the command -------------------------------------------------------------------------------
def test_only_runs_the_named_checks_and_prints_the_reason(production: Any) -> None:
    out = io.StringIO()
    call_command("check_production", "--only", "backups documented", stdout=out)
    assert out.getvalue().splitlines() == [
        "[ok  ] backups documented: BACKUP_POLICY: pg_dump nightly to /srv/backups, restore "
        "tested monthly",
        "ready for production",
    ]
    with pytest.raises(CommandError, match="no such check: nope"):
        call_command("check_production", "--only", "nope", stdout=io.StringIO())
    with pytest.raises(CommandError, match="--url must start with"):
        call_command("check_production", "--url", "ftp://x", stdout=io.StringIO())


def test_a_failing_check_exits_non_zero(tmp_path: Path) -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("BACKUP_POLICY", "DATABASE_URL", "REDIS_URL")
    }
    env["DATABASE_URL"] = f"sqlite:///{tmp_path}/db.sqlite3"
    command = [sys.executable, "manage.py", "check_production", "--only", "backups documented"]
    failed = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert failed.returncode == 1
    assert "[FAIL] backups documented: BACKUP_POLICY is not set" in failed.stdout
    env["BACKUP_POLICY"] = "see the runbook"
    passed = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert passed.returncode == 0, passed.stdout + passed.stderr


@pytest.mark.skipif(
    not os.environ.get("DATABASE_URL", "").startswith("postgres")
    or not os.environ.get("REDIS_URL"),
    reason="the whole gate passes only on PostgreSQL with Redis (DATABASE_URL, REDIS_URL)",
)
def test_a_complete_deployment_passes_every_check(production: Any) -> None:
    call_command("set_webhook", "https://bot.example.org/telegram/webhook", stdout=io.StringIO())
    finished_task(timedelta(seconds=1))
    failed = {r.name: r.problem for r in check_results() if r.problem is not None}
    assert failed == {}, failed
