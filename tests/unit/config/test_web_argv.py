"""The web process (``config/web.py``: ``manage.py serve`` and the image) is shaped by the
settings: server, processes, threads, connections, header timeout and address; a server that
is not known is refused."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from config.web import port_in_use, web_argv
from tests.ports import free_port

ROOT = Path(__file__).resolve().parents[3]


def option(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_granian_is_the_default_shaped_by_the_settings(settings: Any) -> None:
    assert settings.WEB_SERVER == "granian"
    settings.WEB_CONCURRENCY, settings.WEB_THREADS = 3, 2
    settings.WEB_BACKPRESSURE, settings.WEB_HEADER_TIMEOUT_SECONDS = 64, 7
    settings.HOST, settings.PORT = "0.0.0.0", 8123  # noqa: S104 - an address in a test
    argv = web_argv(5)
    assert argv[1:3] == ["-m", "granian"]
    assert option(argv, "--interface") == "wsgi"
    assert option(argv, "--workers") == "3"
    assert option(argv, "--blocking-threads") == "2"
    assert option(argv, "--backpressure") == "64"
    assert option(argv, "--http") == "1"  # the header timeout is HTTP/1's
    assert option(argv, "--http1-header-read-timeout") == "7000"
    assert (option(argv, "--host"), option(argv, "--port")) == ("0.0.0.0", "8123")  # noqa: S104
    # Workers are stopped one after the other: their timeouts add up to the graceful budget.
    assert option(argv, "--workers-kill-timeout") == "1"  # 5 s for 3 processes
    settings.WEB_CONCURRENCY = 2
    assert option(web_argv(8), "--workers-kill-timeout") == "4"
    settings.WEB_CONCURRENCY = 1
    assert option(web_argv(8), "--workers-kill-timeout") == "8"
    assert "--respawn-failed-workers" in argv
    assert argv[-1] == "config.wsgi:application"


def test_gunicorn_runs_its_stock_gthread_worker_shaped_by_the_settings(settings: Any) -> None:
    settings.WEB_SERVER = "gunicorn"
    settings.WEB_CONCURRENCY, settings.WEB_THREADS = 3, 2
    settings.WEB_BACKPRESSURE, settings.WEB_HEADER_TIMEOUT_SECONDS = 64, 7
    settings.HOST, settings.PORT = "0.0.0.0", 8123  # noqa: S104 - an address in a test
    argv = web_argv()
    assert argv[1:4] == ["-m", "gunicorn", "config.wsgi"]
    assert option(argv, "--worker-class") == "gthread"
    assert option(argv, "--workers") == "3"
    assert option(argv, "--threads") == "2"
    assert option(argv, "--worker-connections") == "64"
    assert option(argv, "--keep-alive") == "7"
    assert option(argv, "--bind") == "0.0.0.0:8123"
    assert "--reuse-port" in argv  # a socket per worker (tests/integration/test_web_balance.py)
    assert option(argv, "--graceful-timeout") == "8"
    assert option(web_argv(5), "--graceful-timeout") == "5"
    assert option(argv, "--logger-class") == "config.gunicorn_logging.QuietProbesLogger"


@pytest.mark.parametrize(("server", "threads"), [("granian", 128), ("gunicorn", 4)])
def test_each_server_has_its_own_default_threads(server: str, threads: int) -> None:
    """granian's threads start on demand and a slow body holds one: room for a hundred slow
    clients; gunicorn's start for good: 4."""
    done = subprocess.run(
        [sys.executable, "-c", "from django.conf import settings; print(settings.WEB_THREADS)"],
        cwd=ROOT,
        env={**clean_env(), "DJANGO_SETTINGS_MODULE": "config.settings", "WEB_SERVER": server},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.strip() == str(threads)


def clean_env() -> dict[str, str]:
    """The environment without the suite's settings, and no .env."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "WEB_", "TELEGRAM_")) and k not in ("REDIS_URL",)
    }
    return {**env, "ENV_FILE": "/dev/null", "DJANGO_DEBUG": "true"}


def image_command(**variables: str) -> subprocess.CompletedProcess[str]:
    """``python -m config.web`` (the image's command) with ``variables`` and no .env."""
    env = {**clean_env(), **variables}
    return subprocess.run(
        [sys.executable, "-m", "config.web"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_image_command_refuses_an_unknown_server_with_one_line() -> None:
    done = image_command(WEB_SERVER="uwsgi")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "configuration error: WEB_SERVER: must be one of gunicorn, granian, got 'uwsgi'"
    ]


def _listening(reuse_port: bool) -> socket.socket:
    listener = socket.socket()
    if reuse_port:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    return listener


@pytest.mark.parametrize("reuse_port", [False, True])
def test_a_port_a_server_listens_on_is_in_use(reuse_port: bool) -> None:
    with _listening(reuse_port) as listener:  # both servers listen with SO_REUSEPORT
        port = listener.getsockname()[1]
        assert port_in_use("127.0.0.1", port)
        assert port_in_use("0.0.0.0", port)  # noqa: S104 - every address includes it
    assert not port_in_use("127.0.0.1", free_port())


def test_the_image_command_refuses_a_port_in_use_with_one_line() -> None:
    with _listening(reuse_port=True) as listener:
        port = listener.getsockname()[1]
        done = image_command(PORT=str(port))
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"127.0.0.1:{port} is in use: is the server already running? (PORT sets another port)"
    ]


def test_every_deployment_starts_the_web_process_with_the_same_command() -> None:
    """The image and the systemd unit both run ``python -m config.web``, so the server's
    options live in one place (``web_argv``); the unit once carried a copy of gunicorn's
    command line that had fallen behind the image's."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert 'CMD ["python", "-m", "config.web"]' in dockerfile
    unit = (ROOT / "deploy" / "systemd" / "tgcp-web.service").read_text()
    starts = [line for line in unit.splitlines() if line.startswith("ExecStart=")]
    assert starts == ["ExecStart=/srv/tgcp/.venv/bin/python -m config.web"]
