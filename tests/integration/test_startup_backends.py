"""Start-up against a database or Redis that is not there (a closed port, a missing database):
the web process, ``serve``, ``qcluster`` and the commands that use the database stop with one
line naming the setting and what failed, and exit code 2, as a bad setting does; no
traceback, no server that starts and whose workers then die. Real processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from django.db import connection

from tests.ports import free_port
from tests.processes import kill_group

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "never-shown-4b1d"  # a throwaway password that must not be echoed
WEB = ("-m", "config.web")
SERVE = ("manage.py", "serve")
QCLUSTER = ("manage.py", "qcluster")

pytestmark = pytest.mark.timeout(120)


def run(tmp_path: Path, command: tuple[str, ...], **variables: str) -> tuple[int, list[str]]:
    """``command`` with a throwaway SQLite database unless ``variables`` say otherwise; its
    exit code and the lines of its stderr."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "WEB_", "TELEGRAM_", "Q_"))
        and k not in ("DATABASE_URL", "REDIS_URL", "PORT", "HOST", "PROMETHEUS_MULTIPROC_DIR")
    }
    env.update(
        ENV_FILE=os.devnull,
        DJANGO_SECRET_KEY="u" * 50,
        DATABASE_URL=f"sqlite:///{tmp_path}/db.sqlite3",
        PORT=str(free_port()),
        PROMETHEUS_MULTIPROC_DIR=str(tmp_path),
    )
    env.update(variables)
    process = subprocess.Popen(
        [sys.executable, *command],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # a server that does start is killed with all its processes
    )
    try:
        _, stderr = process.communicate(timeout=60)
    finally:
        kill_group(process)
    return process.returncode, stderr.strip().splitlines()


def closed_postgres_url() -> str:
    return f"postgres://tgcp:{PASSWORD}@127.0.0.1:{free_port()}/tgcp"


@pytest.mark.parametrize(
    "command", [WEB, SERVE, QCLUSTER, ("manage.py", "migrate", "--noinput")], ids=" ".join
)
def test_a_database_on_a_closed_port_stops_it_with_one_line(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    code, lines = run(tmp_path, command, DATABASE_URL=closed_postgres_url())
    assert code == 2, lines
    assert len(lines) == 1, lines
    assert lines[0].startswith("start-up error: DATABASE_URL: cannot use the database: ")
    assert "Connection refused" in lines[0]
    assert PASSWORD not in lines[0]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="needs a PostgreSQL server")
@pytest.mark.parametrize("command", [WEB, ("manage.py", "migrate", "--noinput")], ids=" ".join)
def test_a_missing_database_stops_it_with_one_line(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    url = urlunsplit(urlsplit(os.environ["DATABASE_URL"])._replace(path="/no_such_db_4b1d"))
    code, lines = run(tmp_path, command, DATABASE_URL=url)
    assert code == 2, lines
    assert lines == [
        "start-up error: DATABASE_URL: cannot use the database: "
        + lines[0].partition("cannot use the database: ")[2]
    ]
    assert 'database "no_such_db_4b1d" does not exist' in lines[0]


# A command that uses Redis through the cache, the way any command's code would.
CACHE_COMMAND = ("manage.py", "shell", "-c", "from django.core.cache import cache; cache.get('k')")


@pytest.mark.parametrize("command", [WEB, SERVE, QCLUSTER, CACHE_COMMAND], ids=" ".join)
def test_redis_on_a_closed_port_stops_it_with_one_line(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    port = free_port()
    code, lines = run(tmp_path, command, REDIS_URL=f"redis://127.0.0.1:{port}/0")
    assert code == 2, lines
    assert lines == [
        "start-up error: REDIS_URL: cannot use Redis: Redis KV store unavailable: "
        f"Error 111 connecting to 127.0.0.1:{port}. Connection refused."
    ]


def test_a_command_failing_for_another_reason_keeps_its_traceback(tmp_path: Path) -> None:
    """With the backends there, a failing command's own error is shown as before."""
    code, lines = run(tmp_path, ("manage.py", "shell", "-c", "raise ValueError('its own')"))
    assert code == 1
    assert lines[0] == "Traceback (most recent call last):"
    assert lines[-1] == "ValueError: its own"
