"""docs/operations.md's commands for making secrets, run as written and fed to the production
gate and to ``manage.py check --deploy``: the recipe of the secret key gave 43 characters,
which both refused."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.unit.config.test_settings import run_manage

ROOT = Path(__file__).resolve().parents[3]
RECIPE = re.compile(r"^\s*(python3 -c \"[^\"]+\")\s+# ([A-Z_]+)", re.MULTILINE)
TOKEN = "123456:ABCdefGHIjklMNOpqrSTUvwx-yz_0123"


def recipes() -> dict[str, str]:
    """``{variable: command}`` from the guide's code block (the first variable a line names)."""
    text = (ROOT / "docs" / "operations.md").read_text()
    return {name: command for command, name in RECIPE.findall(text)}


def made_by(command: str) -> str:
    result = subprocess.run(
        ["bash", "-c", command], capture_output=True, text=True, timeout=30, check=True
    )
    return result.stdout.strip()


def production_env(tmp_path: Path, **values: str) -> dict[str, str]:
    return {
        "DJANGO_DEBUG": "false",
        "DJANGO_ALLOWED_HOSTS": "bot.example.org",
        "DJANGO_BEHIND_TLS_PROXY": "true",
        "DJANGO_CSRF_TRUSTED_ORIGINS": "https://bot.example.org",
        "DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3",
        **values,
    }


def test_the_guide_has_the_recipes() -> None:
    assert {"DJANGO_SECRET_KEY", "TELEGRAM_WEBHOOK_SECRET", "POSTGRES_PASSWORD"} <= set(recipes())


def test_the_secret_key_recipe_passes_check_deploy_and_the_gate(tmp_path: Path) -> None:
    key = made_by(recipes()["DJANGO_SECRET_KEY"])
    env = production_env(tmp_path, DJANGO_SECRET_KEY=key)
    deploy = run_manage(env, "check", "--deploy", "--fail-level", "WARNING")
    assert deploy.returncode == 0, deploy.stdout + deploy.stderr
    assert "W009" not in deploy.stdout + deploy.stderr
    gate = run_manage(env, "check_production", "--offline", "--only", "secret key")
    assert gate.returncode == 0, gate.stdout
    assert "[ok  ] secret key" in gate.stdout
    # What the guide used to say (43 characters) fails both: the test tells them apart.
    short = production_env(tmp_path, DJANGO_SECRET_KEY=made_by(recipes()["POSTGRES_PASSWORD"]))
    assert "W009" in run_manage(short, "check", "--deploy").stderr
    refused = run_manage(short, "check_production", "--offline", "--only", "secret key")
    assert refused.returncode == 1 and "shorter than 50" in refused.stdout


def test_the_webhook_secret_recipe_passes_the_gate(tmp_path: Path) -> None:
    secret = made_by(recipes()["TELEGRAM_WEBHOOK_SECRET"])
    env = production_env(
        tmp_path,
        DJANGO_SECRET_KEY="k" * 60,
        TELEGRAM_BOT_TOKEN=TOKEN,
        OWNER_TELEGRAM_ID="42",
        TELEGRAM_WEBHOOK_SECRET=secret,
    )
    check = ("check_production", "--offline", "--only", "bot token and webhook secret")
    gate = run_manage(env, *check)
    assert gate.returncode == 0, gate.stdout + gate.stderr
    # A short secret still starts (existing deployments), and the gate says what is required.
    weak = run_manage({**env, "TELEGRAM_WEBHOOK_SECRET": "s3cret"}, *check)
    assert weak.returncode == 1
    assert "TELEGRAM_WEBHOOK_SECRET is shorter than 32 characters" in weak.stdout
