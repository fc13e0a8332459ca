"""The web server as the image starts it (``python -m config.web``), on the test database and a
KV store of the test's choosing, and a webhook client for it: for tests that stop or freeze a
backend under a real server."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.content.test_processes import database_url
from tests.ports import free_port
from tests.processes import kill_group, start_web, wait_until_healthy

SECRET = "webhook-process-test-secret"


@contextmanager
def webhook_server(tmp_path: Path, redis_url: str, **settings: str) -> Iterator[int]:
    """The web server (one process, one thread: requests in turn) on ``redis_url``, with
    ``settings`` added to its environment; yields its port. Its output goes to
    ``tmp_path / "web.log"``."""
    port = free_port()
    metrics = tmp_path / "metrics"
    metrics.mkdir(exist_ok=True)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "TELEGRAM_", "WEB_", "STATS_", "PROMETHEUS_", "UPDATE_"))
        and k not in ("DATABASE_URL", "REDIS_URL", "PORT", "HOST")
    }
    env.update(
        {
            "ENV_FILE": os.devnull,
            "DATABASE_URL": database_url(),
            "REDIS_URL": redis_url,
            "DJANGO_SECRET_KEY": "h" * 50,
            "TELEGRAM_WEBHOOK_SECRET": SECRET,
            "WEB_CONCURRENCY": "1",
            "WEB_THREADS": "1",
            "HOST": "127.0.0.1",
            "PORT": str(port),
            "PROMETHEUS_MULTIPROC_DIR": str(metrics),
            **settings,
        }
    )
    with (tmp_path / "web.log").open("wb") as log:
        process = start_web(env, log)
    try:
        wait_until_healthy(port)
        yield port
    finally:
        kill_group(process)


def post(port: int, update: dict[str, Any]) -> tuple[int, str]:
    """The webhook's status and ``X-Update-Outcome`` for ``update``."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/telegram/webhook",
        data=json.dumps(update).encode(),
        headers={"Content-Type": "application/json", "X-Telegram-Bot-Api-Secret-Token": SECRET},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - loopback
            return response.status, str(response.headers["X-Update-Outcome"])
    except urllib.error.HTTPError as exc:
        return exc.code, str(exc.headers.get("X-Update-Outcome"))
