"""manage.py check_production: each check fails for the right reason, and passes when fixed."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from telegram_bot.ops.production import run_checks
from telegram_bot.scheduling import schedules_sync
from tests.fakes.telegram import FakeTelegramServer


def problems(**kwargs: Any) -> dict[str, str | None]:
    return dict(run_checks(**kwargs))


@pytest.fixture
def production(bot: FakeTelegramServer, settings: Any) -> Any:
    settings.DEBUG = False
    settings.SECRET_KEY = "p" * 60
    settings.ALLOWED_HOSTS = ["bot.example.org"]
    settings.JOB_RETRY_JITTER = 1.0
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.SESSION_COOKIE_SECURE = settings.CSRF_COOKIE_SECURE = True
    settings.SECURE_HSTS_SECONDS = 31_536_000
    settings.SECURE_SSL_REDIRECT = True
    schedules_sync()
    return settings


def test_a_configured_deployment_passes_the_settings_checks(production: Any) -> None:
    result = problems(offline=True)
    # The test database may be PostgreSQL (CI) or SQLite; Redis may be set or not.
    assert result["debug off"] is None
    assert result["secret key"] is None
    assert result["schedules in sync"] is None
    assert result["admin recovery path"] is None
    assert result["TLS proxy header"] is None
    assert result["secure cookies"] is None
    assert result["HSTS and HTTPS redirect"] is None
    if not production.REDIS_URL:
        assert "REDIS_URL is not set" in (result["Redis reachable"] or "")


@pytest.mark.parametrize(
    ("change", "check", "says"),
    [
        ({"DEBUG": True}, "debug off", "DEBUG is on"),
        ({"SECRET_KEY": "short-but-not-dev-key-xxxxxxxxxxxxx"}, "secret key", "shorter than 50"),
        ({"ALLOWED_HOSTS": ["localhost"]}, "allowed hosts", "no public host"),
        ({"ALLOWED_HOSTS": ["*"]}, "allowed hosts", "any host"),
        (
            {"TELEGRAM_WEBHOOK_SECRET": ""},
            "bot token and webhook secret",
            "TELEGRAM_WEBHOOK_SECRET",
        ),
        ({"OWNER_TELEGRAM_ID": None}, "admin recovery path", "OWNER_TELEGRAM_ID"),
        ({"JOB_RETRY_JITTER": 0.0}, "retry policy bounded", "lockstep"),
        ({"JOB_MAX_RETRIES": 0}, "retry policy bounded", "fail jobs at once"),
        ({"SECURE_PROXY_SSL_HEADER": None}, "TLS proxy header", "DJANGO_BEHIND_TLS_PROXY"),
        ({"SESSION_COOKIE_SECURE": False}, "secure cookies", "DJANGO_SECURE_COOKIES"),
        ({"CSRF_COOKIE_SECURE": False}, "secure cookies", "DJANGO_SECURE_COOKIES"),
        ({"SECURE_HSTS_SECONDS": 0}, "HSTS and HTTPS redirect", "DJANGO_HSTS_SECONDS"),
        ({"SECURE_SSL_REDIRECT": False}, "HSTS and HTTPS redirect", "DJANGO_SSL_REDIRECT"),
    ],
)
def test_each_check_names_its_problem(
    production: Any, change: dict[str, Any], check: str, says: str
) -> None:
    for name, value in change.items():
        setattr(production, name, value)
    assert says in (problems(offline=True)[check] or "")


def test_unsynced_schedules_are_reported(production: Any) -> None:
    from django_q.models import Schedule

    Schedule.objects.filter(name="tgcp.jobs_tick").delete()
    assert "sync_schedules" in (problems(offline=True)["schedules in sync"] or "")


def test_the_webhook_check_asks_telegram(production: Any, bot: FakeTelegramServer) -> None:
    assert "no webhook registered" in (problems()["webhook registered"] or "")
    call_command("set_webhook", "https://bot.example.org/telegram/webhook", stdout=io.StringIO())
    assert problems()["webhook registered"] is None
    assert problems()["Telegram accepts the token"] is None
    bot.fail_next("getMe", status=401, description="Unauthorized")
    assert "Unauthorized" in (problems()["Telegram accepts the token"] or "")


def test_the_command_exits_non_zero_and_prints_no_secret(production: Any) -> None:
    out = io.StringIO()
    production.DEBUG = True
    with pytest.raises(CommandError, match="not ready for production"):
        call_command("check_production", "--offline", stdout=out)
    text = out.getvalue()
    assert "[FAIL] debug off" in text and "[ok  ] secret key" in text
    assert production.TELEGRAM_BOT_TOKEN not in text
    assert production.SECRET_KEY not in text


def test_the_webhook_must_receive_the_member_updates(
    production: Any, bot: FakeTelegramServer
) -> None:
    from telegram_bot.bot import get_client

    # Registered without allowed_updates: Telegram's default leaves chat_member out.
    get_client().set_webhook(url="https://bot.example.org/telegram/webhook")
    problem = problems()["webhook update types"] or ""
    assert "chat_member" in problem and "set_webhook" in problem
    get_client().set_webhook(
        url="https://bot.example.org/telegram/webhook", allowed_updates=["message"]
    )
    assert "my_chat_member" in (problems()["webhook update types"] or "")
    call_command("set_webhook", "https://bot.example.org/telegram/webhook", stdout=io.StringIO())
    assert problems()["webhook update types"] is None
    assert {"chat_member", "my_chat_member"} <= set((bot.webhook or {})["allowed_updates"])
