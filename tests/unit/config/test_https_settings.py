"""HTTPS in production: secure cookies, the redirect and HSTS come from the environment, are on
by default behind a TLS proxy, and ``check --deploy`` is clean in the documented production
configuration (README, Deployment)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from tests.unit.config.test_settings import run_manage

SECRET = "k3Y-" + "".join(chr(ord("a") + i % 26) + str(i % 10) for i in range(30))
DOCUMENTED_PRODUCTION = {
    "DJANGO_SECRET_KEY": SECRET,
    "DJANGO_DEBUG": "false",
    "DJANGO_ALLOWED_HOSTS": "bot.example.org",
    "DJANGO_BEHIND_TLS_PROXY": "true",
    "DJANGO_SECURE_COOKIES": "true",
    "DJANGO_CSRF_TRUSTED_ORIGINS": "https://bot.example.org",
}
SHOWN = (
    "SECURE_PROXY_SSL_HEADER",
    "SESSION_COOKIE_SECURE",
    "CSRF_COOKIE_SECURE",
    "SECURE_SSL_REDIRECT",
    "SECURE_HSTS_SECONDS",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS",
    "SECURE_HSTS_PRELOAD",
)


def https_settings(env: dict[str, str], tmp_path: Path) -> dict[str, Any]:
    code = (
        "import json; from django.conf import settings; "
        f"print(json.dumps({{n: getattr(settings, n, None) for n in {SHOWN!r}}}))"
    )
    database = {"DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3"}
    result = run_manage({**database, **env}, "shell", "-c", code)
    assert result.returncode == 0, result.stderr
    return dict(json.loads(result.stdout.strip().splitlines()[-1]))


def test_check_deploy_is_clean_in_the_documented_production_configuration(
    tmp_path: Path,
) -> None:
    env = {**DOCUMENTED_PRODUCTION, "DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3"}
    result = run_manage(env, "check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_behind_a_tls_proxy_everything_is_on_by_default(tmp_path: Path) -> None:
    env = {**DOCUMENTED_PRODUCTION}
    del env["DJANGO_SECURE_COOKIES"]
    shown = https_settings(env, tmp_path)
    assert shown == {
        "SECURE_PROXY_SSL_HEADER": ["HTTP_X_FORWARDED_PROTO", "https"],
        "SESSION_COOKIE_SECURE": True,
        "CSRF_COOKIE_SECURE": True,
        "SECURE_SSL_REDIRECT": True,
        "SECURE_HSTS_SECONDS": 31_536_000,
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": True,
        "SECURE_HSTS_PRELOAD": False,
    }


def test_without_a_proxy_nothing_forces_https(tmp_path: Path) -> None:
    env = {"DJANGO_SECRET_KEY": SECRET, "DJANGO_DEBUG": "false"}
    shown = https_settings(env, tmp_path)
    assert shown["SECURE_PROXY_SSL_HEADER"] is None
    assert shown["SECURE_SSL_REDIRECT"] is False and shown["SECURE_HSTS_SECONDS"] == 0
    assert shown["SESSION_COOKIE_SECURE"] is False


def test_each_can_be_set_on_its_own(tmp_path: Path) -> None:
    env = {
        **DOCUMENTED_PRODUCTION,
        "DJANGO_HSTS_SECONDS": "600",
        "DJANGO_HSTS_INCLUDE_SUBDOMAINS": "false",
        "DJANGO_SSL_REDIRECT": "false",
    }
    shown = https_settings(env, tmp_path)
    assert shown["SECURE_HSTS_SECONDS"] == 600
    assert shown["SECURE_HSTS_INCLUDE_SUBDOMAINS"] is False
    assert shown["SECURE_SSL_REDIRECT"] is False


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"DJANGO_HSTS_SECONDS": "-1"}, "DJANGO_HSTS_SECONDS"),
        ({"DJANGO_HSTS_SECONDS": "soon"}, "DJANGO_HSTS_SECONDS"),
        ({"DJANGO_SSL_REDIRECT": "maybe"}, "DJANGO_SSL_REDIRECT"),
        (
            {"DJANGO_HSTS_PRELOAD": "true", "DJANGO_HSTS_INCLUDE_SUBDOMAINS": "false"},
            "DJANGO_HSTS_PRELOAD: needs",
        ),
        ({"DJANGO_HSTS_PRELOAD": "true", "DJANGO_HSTS_SECONDS": "600"}, "DJANGO_HSTS_PRELOAD"),
    ],
)
def test_a_bad_https_setting_stops_the_start(env: dict[str, str], says: str) -> None:
    result = run_manage({**DOCUMENTED_PRODUCTION, **env}, "check")
    assert result.returncode == 2
    assert says in result.stderr


@pytest.mark.django_db
def test_plain_http_is_redirected_and_https_answers_carry_hsts(settings: Any) -> None:
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_HSTS_SECONDS = 31_536_000
    settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    settings.ALLOWED_HOSTS = ["bot.example.org"]
    client = Client(HTTP_HOST="bot.example.org")
    plain = client.get("/admin/login/")
    assert plain.status_code == 301
    assert plain["Location"] == "https://bot.example.org/admin/login/"
    secure = client.get("/admin/login/", HTTP_X_FORWARDED_PROTO="https")
    assert secure.status_code == 200
    assert secure["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains"
    # The process manager's probes ask over plain HTTP from the inside.
    assert client.get("/healthz").status_code == 200
