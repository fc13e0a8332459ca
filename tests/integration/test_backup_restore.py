"""Backups are only as good as a restore: deploy/backup dumps a database that holds data,
deploy/restore loads the dump into a fresh database, and the product started on that database
serves the old data to the old operator account (over HTTP, logged in through the admin site).

Needs PostgreSQL (DATABASE_URL) and its client tools (pg_dump, pg_restore, psql).
"""

from __future__ import annotations

import http.cookiejar
import os
import re
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
SOURCE_URL = os.environ.get("DATABASE_URL", "")
pytestmark = [
    pytest.mark.skipif(
        not SOURCE_URL.startswith(("postgres://", "postgresql://")),
        reason="backup and restore: needs DATABASE_URL on PostgreSQL",
    ),
    pytest.mark.skipif(
        not all(shutil.which(tool) for tool in ("pg_dump", "pg_restore", "psql")),
        reason="backup and restore: needs pg_dump, pg_restore and psql (postgresql-client)",
    ),
    pytest.mark.timeout(300),
]
PASSWORD = "restore-test-password-0123"


def database_url(name: str) -> str:
    parts = urllib.parse.urlsplit(SOURCE_URL)
    return urllib.parse.urlunsplit(parts._replace(path=f"/{name}"))


def psql(sql: str) -> None:
    subprocess.run(
        ["psql", "--no-psqlrc", "-q", "-v", "ON_ERROR_STOP=1", "-d", database_url("postgres")],
        input=sql,
        text=True,
        check=True,
        timeout=60,
        capture_output=True,
    )


@pytest.fixture
def databases() -> Iterator[tuple[str, str]]:
    suffix = f"{os.getpid()}_{secrets.token_hex(3)}"
    names = (f"tgcp_backup_src_{suffix}", f"tgcp_backup_dst_{suffix}")
    for name in names:
        psql(f'CREATE DATABASE "{name}"')
    try:
        yield names
    finally:
        for name in names:
            psql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def run(env: dict[str, str], *argv: str) -> str:
    result = subprocess.run(
        argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=180, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_a_restored_backup_serves_the_old_data(databases: tuple[str, str], tmp_path: Path) -> None:
    source, target = databases
    base = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "REDIS_URL")}
    base.update(
        {
            "ENV_FILE": os.devnull,
            "DJANGO_SECRET_KEY": "b" * 50,
            "DJANGO_DEBUG": "false",
            "PYTHON": sys.executable,
        }
    )
    old = {**base, "DATABASE_URL": database_url(source)}
    new = {**base, "DATABASE_URL": database_url(target)}
    python = sys.executable
    marker = f"restore-{secrets.token_hex(6)}"
    run(old, python, "manage.py", "migrate", "--noinput", "-v", "0")
    job_id = run(
        old,
        python,
        "manage.py",
        "shell",
        "-v",
        "0",
        "-c",
        "from django.contrib.auth.models import User; "
        "from telegram_bot.jobs.models import Job; "
        f"User.objects.create_superuser('operator', 'ops@example.org', '{PASSWORD}'); "
        f"print(Job.objects.create(kind='core.noop', dedupe_key='{marker}').pk)",
    ).strip()
    dump = tmp_path / "tgcp.dump"
    run(old, "bash", "deploy/backup", str(dump))
    assert stat.S_IMODE(dump.stat().st_mode) == 0o600  # sessions, password hashes, tickets
    # A restore refuses a database that is not empty (it would mix two states).
    refused = subprocess.run(
        ["bash", "deploy/restore", str(dump)], cwd=ROOT, env=old, capture_output=True, text=True
    )
    assert refused.returncode == 2 and "restore into an empty one" in refused.stderr
    # No Python to run migrate: refused before loading, so the database stays empty and the
    # next run (with one) is not refused for its tables.
    missing = {**new, "PYTHON": str(tmp_path / "no-such-python")}
    refused = subprocess.run(
        ["bash", "deploy/restore", str(dump)], cwd=ROOT, env=missing, capture_output=True, text=True
    )
    assert refused.returncode == 2 and "no Python" in refused.stderr
    run(new, "bash", "deploy/restore", str(dump))
    # DEBUG is off: the admin's pages need the collected static files' manifest; collected
    # into this test's own folder, not var/static, which other tests' processes read meanwhile.
    new["STATIC_ROOT"] = str(tmp_path / "static")
    run(new, python, "manage.py", "collectstatic", "--noinput", "-v", "0")

    port = free_port()
    serve = subprocess.Popen(
        [python, "manage.py", "serve", "--no-worker"],
        cwd=ROOT,
        env={**new, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        page = admin_page(port, f"/admin/telegram_bot/job/{job_id}/change/")
    finally:
        os.killpg(serve.pid, signal.SIGTERM)
        serve.wait(timeout=30)
    assert marker in page


def admin_page(port: int, path: str) -> str:
    """Log in to the admin site as the restored operator and fetch ``path``."""
    base = f"http://127.0.0.1:{port}"
    opener = urllib.request.build_opener(
        urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
    )
    deadline = time.monotonic() + 180  # a generous start-up bound for a loaded CI machine
    while True:
        try:
            login = opener.open(f"{base}/admin/login/", timeout=5).read().decode()
            break
        except urllib.error.HTTPError as exc:  # it started, and answers with an error
            raise AssertionError(f"{exc.code}: {exc.read()[:500]!r}") from None
        except OSError:
            assert time.monotonic() < deadline, "the restored product did not start"
            time.sleep(0.3)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login).group(1)  # type: ignore[union-attr]
    form = urllib.parse.urlencode(
        {
            "csrfmiddlewaretoken": token,
            "username": "operator",
            "password": PASSWORD,
            "next": path,
        }
    ).encode()
    request = urllib.request.Request(  # noqa: S310 - loopback
        f"{base}/admin/login/?next={path}", data=form, headers={"Referer": f"{base}/admin/login/"}
    )
    return opener.open(request, timeout=10).read().decode()
