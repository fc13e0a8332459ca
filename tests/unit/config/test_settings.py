"""A bad setting stops the process with one line naming the variable and what is wrong."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest

from config.env import ConfigError, Environment, read_environment

ROOT = Path(__file__).resolve().parents[3]
GOOD_TOKEN = "123456:ABCdefGHIjklMNOpqrSTUvwx-yz_0123"
DEV_KEY = "dev-insecure-9f3c1e0b7a2d4c68b5e1f0a3d7c9e2b4-do-not-use-in-production"
BASE_ENV = {"DJANGO_SECRET_KEY": "x" * 50, "DJANGO_DEBUG": "false"}


def run_manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "TELEGRAM_", "OWNER_", "ADMIN_", "ALLOWED_"))
        and k not in ("DATABASE_URL", "REDIS_URL", "PORT")
    }
    clean.update(env)
    return subprocess.run(
        [sys.executable, "manage.py", *(args or ("check",))],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
    )


BAD_SETTINGS = [
    (
        {"TELEGRAM_BOT_TOKEN": "not-a-token", "OWNER_TELEGRAM_ID": "1"},
        "TELEGRAM_BOT_TOKEN",
        "<digits>:<secret>",
    ),
    (
        {"TELEGRAM_BOT_TOKEN": "12345:short", "OWNER_TELEGRAM_ID": "1"},
        "TELEGRAM_BOT_TOKEN",
        "<digits>:<secret>",
    ),
    ({"TELEGRAM_WEBHOOK_SECRET": "has spaces!"}, "TELEGRAM_WEBHOOK_SECRET", "1-256 characters"),
    ({"TELEGRAM_WEBHOOK_SECRET": "a" * 257}, "TELEGRAM_WEBHOOK_SECRET", "1-256 characters"),
    ({"OWNER_TELEGRAM_ID": "abc"}, "OWNER_TELEGRAM_ID", "integer"),
    ({"OWNER_TELEGRAM_ID": "-5"}, "OWNER_TELEGRAM_ID", "at least 1"),
    ({"TELEGRAM_BOT_TOKEN": GOOD_TOKEN}, "OWNER_TELEGRAM_ID", "must be set"),
    ({"ADMIN_TELEGRAM_IDS": "1,two"}, "ADMIN_TELEGRAM_IDS", "integer"),
    ({"ALLOWED_CHAT_IDS": "-100,1.5"}, "ALLOWED_CHAT_IDS", "integer"),
    ({"TELEGRAM_API_BASE_URL": "ftp://example.org"}, "TELEGRAM_API_BASE_URL", "http://"),
    ({"TELEGRAM_API_BASE_URL": "http://"}, "TELEGRAM_API_BASE_URL", "no host"),
    ({"DATABASE_URL": "mysql://db/x"}, "DATABASE_URL", "postgres://"),
    ({"DATABASE_URL": "postgres://host:notaport/db"}, "DATABASE_URL", "not a valid URL"),
    ({"DATABASE_URL": "postgres://host"}, "DATABASE_URL", "database name"),
    ({"REDIS_URL": "http://localhost:6379"}, "REDIS_URL", "redis://"),
    ({"REDIS_URL": "redis://"}, "REDIS_URL", "no host"),
    (
        {"DJANGO_SECRET_KEY": DEV_KEY},
        "DJANGO_SECRET_KEY",
        "DJANGO_DEBUG is off",
    ),
    ({"DJANGO_SECRET_KEY": "short"}, "DJANGO_SECRET_KEY", "32 characters"),
    ({"DJANGO_DEBUG": "maybe"}, "DJANGO_DEBUG", "true or false"),
    ({"STATE_KEYS_BY_BOT": "per-bot"}, "STATE_KEYS_BY_BOT", "true or false"),
    ({"PORT": "99999"}, "PORT", "at most 65535"),
    ({"PORT": "http"}, "PORT", "integer"),
    ({"WEB_THREADS": "0"}, "WEB_THREADS", "at least 1"),
    ({"WEB_THREADS": "four"}, "WEB_THREADS", "integer"),
    ({"WEB_SERVER": "uwsgi"}, "WEB_SERVER", "one of gunicorn, granian"),
    ({"WEB_THREADS": "1025"}, "WEB_THREADS", "at most 1024"),
    ({"WEB_BACKPRESSURE": "4"}, "WEB_BACKPRESSURE", "at least 8"),
    ({"WEB_HEADER_TIMEOUT_SECONDS": "61"}, "WEB_HEADER_TIMEOUT_SECONDS", "at most 60"),
    ({"WEB_HEADER_TIMEOUT_SECONDS": "0"}, "WEB_HEADER_TIMEOUT_SECONDS", "at least 1"),
    ({"STATS_WRITE_BEHIND_MS": "-1"}, "STATS_WRITE_BEHIND_MS", "at least 0"),
    ({"STATS_WRITE_BEHIND_MS": "1001"}, "STATS_WRITE_BEHIND_MS", "at most 1000"),
    ({"STATS_WRITE_BEHIND_MS": "fast"}, "STATS_WRITE_BEHIND_MS", "integer"),
    # Durations and sizes have an upper bound: a huge one would pass the start and then fail
    # every update that stores it (a TTL in milliseconds past 64 bits).
    ({"SUPPORT_OPEN_TTL_SECONDS": "99999999999999999999"}, "SUPPORT_OPEN_TTL_SECONDS", "range"),
    ({"SUPPORT_OPEN_TTL_SECONDS": "9000000000000000"}, "SUPPORT_OPEN_TTL_SECONDS", "at most"),
    ({"SUPPORT_REPLY_TTL_SECONDS": "700000"}, "SUPPORT_REPLY_TTL_SECONDS", "at most 604800"),
    ({"CONTENT_WORKFLOW_TTL_SECONDS": "700000"}, "CONTENT_WORKFLOW_TTL_SECONDS", "at most"),
    ({"STATS_BACKFILL_LEASE_SECONDS": "100000"}, "STATS_BACKFILL_LEASE_SECONDS", "at most"),
    ({"STATS_COMMAND_COOLDOWN_SECONDS": "100000"}, "STATS_COMMAND_COOLDOWN_SECONDS", "at most"),
    ({"KV_PURGE_BATCH": "1000000"}, "KV_PURGE_BATCH", "at most"),
    ({"WORKER_SEEN_WITHIN_SECONDS": "100000"}, "WORKER_SEEN_WITHIN_SECONDS", "at most"),
    ({"RATE_LIMIT_USER_PER_MINUTE": "1000000"}, "RATE_LIMIT_USER_PER_MINUTE", "at most"),
    ({"OWNER_TELEGRAM_ID": "99999999999999999999"}, "OWNER_TELEGRAM_ID", "64-bit"),
    # A lease shorter than a send's window would let a second worker send while it is out.
    ({"JOB_LEASE_SECONDS": "30"}, "JOB_LEASE_SECONDS", "at least 90"),
    ({"ADMIN_TELEGRAM_IDS": "1,-99999999999999999999"}, "ADMIN_TELEGRAM_IDS", "64-bit"),
    (
        {"FEATURES_DISABLED": "support,tickets"},
        "FEATURES_DISABLED",
        "no feature 'tickets'; the features are support, community, content, moderation, rules, "
        "stats",
    ),
    ({"FEATURES_DISABLED": "telegram_bot"}, "FEATURES_DISABLED", "no feature 'telegram_bot'"),
    ({"LOG_FORMAT": "xml"}, "LOG_FORMAT", "one of plain, json"),
    ({"DJANGO_HSTS_PRELOAD": "true"}, "DJANGO_HSTS_PRELOAD", "at least 31536000"),
    ({"JOB_RETRY_BASE_DELAY": "10", "JOB_RETRY_MAX_DELAY": "5"}, "JOB_RETRY_MAX_DELAY", "at least"),
]


@pytest.mark.parametrize(
    ("env", "name", "problem"),
    BAD_SETTINGS,
    ids=[f"{name}-{i}" for i, (_, name, _) in enumerate(BAD_SETTINGS)],
)
def test_a_bad_setting_stops_manage_py_with_one_line(
    env: dict[str, str], name: str, problem: str
) -> None:
    result = run_manage({**BASE_ENV, **env})
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"configuration error: {name}: ")
    assert problem in lines[0]


def test_a_database_password_that_breaks_the_url_is_not_echoed() -> None:
    url = "postgres://tgcp:Zx9/Qp2+rT5sVb8=@db:5432/tgcp"  # openssl rand -base64 output
    result = run_manage({**BASE_ENV, "DATABASE_URL": url})
    assert result.returncode == 2
    assert "Zx9" not in result.stderr + result.stdout
    assert "configuration error: DATABASE_URL: is not a valid URL" in result.stderr
    assert "%2F" in result.stderr


def test_a_bad_token_is_not_echoed() -> None:
    secret = "99999:this-is-a-leaked-secret with space"
    result = run_manage({**BASE_ENV, "TELEGRAM_BOT_TOKEN": secret, "OWNER_TELEGRAM_ID": "1"})
    assert result.returncode == 2
    assert "leaked-secret" not in result.stderr + result.stdout


def test_the_development_secret_key_is_fine_with_debug_on() -> None:
    result = run_manage({"DJANGO_DEBUG": "true"})
    assert result.returncode == 0, result.stderr


def test_good_settings_pass_the_check(tmp_path: Path) -> None:
    result = run_manage(
        {
            **BASE_ENV,
            "TELEGRAM_BOT_TOKEN": GOOD_TOKEN,
            "OWNER_TELEGRAM_ID": "42",
            "ADMIN_TELEGRAM_IDS": "7, 8",
            "ALLOWED_CHAT_IDS": "-1001,-1002",
            "TELEGRAM_WEBHOOK_SECRET": "s3cr3t_-",
            "PORT": "8081",
            "DATABASE_URL": f"sqlite:///{tmp_path}/x.sqlite3",
        }
    )
    assert result.returncode == 0, result.stderr


def read(environ: dict[str, str]) -> Environment:
    """The settings of ``environ`` alone, as a process started with it reads them."""
    with mock.patch.dict(os.environ, environ, clear=True):
        return read_environment()


def test_secret_file_variant(tmp_path: Path) -> None:
    secret = tmp_path / "key"
    secret.write_text("k" * 40 + "\n")
    assert read({"DJANGO_SECRET_KEY_FILE": str(secret)}).DJANGO_SECRET_KEY == "k" * 40
    with pytest.raises(ConfigError, match="DJANGO_SECRET_KEY_FILE: cannot read"):
        read({"DJANGO_SECRET_KEY_FILE": str(tmp_path / "missing")})
    with pytest.raises(ConfigError, match="set only one"):
        read({"HOST": "1", "HOST_FILE": str(secret)})


@pytest.mark.parametrize(
    ("value", "expected"),
    [("1", True), ("TRUE", True), ("on", True), ("0", False), ("no", False)],
)
def test_booleans(value: str, expected: bool) -> None:
    assert read({"LEAVE_UNLISTED_CHATS": value}).LEAVE_UNLISTED_CHATS is expected
    assert read({"LOGIN_THROTTLING": value}).LOGIN_THROTTLING is expected
    assert read({"LOGIN_THROTTLING": ""}).LOGIN_THROTTLING is True  # empty: the default


def test_lists_of_ids() -> None:
    assert read({"ALLOWED_CHAT_IDS": " -100, 5 ,,7"}).ALLOWED_CHAT_IDS == (-100, 5, 7)
    assert read({}).ALLOWED_CHAT_IDS == ()


def test_database_urls() -> None:
    from config.settings import database_from_url

    pg = database_from_url("postgres://u:p%40ss@db.example:5433/name?sslmode=require")
    assert pg["ENGINE"] == "django.db.backends.postgresql"
    assert (pg["NAME"], pg["USER"], pg["PASSWORD"], pg["HOST"], pg["PORT"]) == (
        "name",
        "u",
        "p@ss",
        "db.example",
        "5433",
    )
    assert pg["OPTIONS"] == {"sslmode": "require"}
    absolute = database_from_url("sqlite:////tmp/tgcp-test/a.sqlite3")
    assert absolute["NAME"] == "/tmp/tgcp-test/a.sqlite3"
    assert "journal_mode=WAL" in absolute["OPTIONS"]["init_command"]  # type: ignore[index]


@pytest.mark.parametrize(
    ("allowed", "host"),
    [
        ("", "127.0.0.1"),
        ("*", "127.0.0.1"),
        ("bot.example.org", "bot.example.org"),
        (" .example.org , other.org", "example.org"),
        ("*, bot.example.org", "bot.example.org"),
    ],
)
def test_the_image_healthcheck_asks_with_an_allowed_host(allowed: str, host: str) -> None:
    from config.healthcheck import probe_host

    assert probe_host(allowed) == host
