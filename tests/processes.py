"""Helpers for the tests that start real processes (servers, the worker) of their own."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from subprocess import Popen
from typing import IO

ROOT = Path(__file__).resolve().parents[1]


def wait_until_healthy(port: int, timeout: float = 60) -> None:
    """Return once ``/healthz`` on the loopback ``port`` answers 200, or after ``timeout``
    seconds (the test's own requests then fail and say why)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):
                return
        except OSError:  # not listening yet, or not 200 (HTTPError is an OSError)
            time.sleep(0.2)


def kill_group(process: subprocess.Popen[bytes] | subprocess.Popen[str]) -> None:
    """SIGKILL the process group ``process`` leads (started with ``start_new_session``) if it
    is still running, and reap it: a failed test leaves no server behind."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def web_env(tmp_path: Path, port: int, **settings: str) -> dict[str, str]:
    """The environment of a web server on the loopback ``port`` and a throwaway SQLite database
    in ``tmp_path``, with the web server's defaults (no ``WEB_*`` of the shell) and without the
    suite's own database, Redis or gunicorn options; ``settings`` adds to it or overrides it."""
    drop = ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE", "GUNICORN_CMD_ARGS")
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("WEB_")}
    env.update(
        DATABASE_URL=f"sqlite:///{tmp_path}/db.sqlite3",
        PORT=str(port),
        HOST="127.0.0.1",
        DJANGO_SECRET_KEY="s" * 50,
        DJANGO_DEBUG="false",
        ENV_FILE=os.devnull,
        STATIC_ROOT=str(tmp_path / "static"),
    )
    env.update(settings)
    return env


def start_web(env: dict[str, str], output: IO[bytes] | int = subprocess.DEVNULL) -> Popen[bytes]:
    """``python -m config.web`` as the image runs it, in a process group of its own (for
    ``kill_group``), its output to ``output``."""
    return subprocess.Popen(
        [sys.executable, "-m", "config.web"],
        cwd=ROOT,
        env=env,
        stdout=output,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
