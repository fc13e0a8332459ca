"""A web server stopped by SIGTERM (``docker stop``, systemd, ``manage.py serve``) writes the
statistics' pending adds before its processes exit, with either server (``WEB_SERVER``): every
group message answered before the stop is in the database after it. Real processes: the web
server as the image starts it (``python -m config.web``) on the test database and a private
Redis, with a write-behind interval longer than the test's messages take."""

from __future__ import annotations

import json
import os
import signal
import time
import urllib.request
from pathlib import Path

import pytest
from django.db import connection
from django.db.models import Sum

from stats.models import DailyUserStat
from tests.content.test_processes import database_url
from tests.ports import free_port
from tests.processes import kill_group, start_web, wait_until_healthy
from tests.redis_server import private_redis

CHAT = -100_777_001
SECRET = "stop-test-webhook-secret"

pytestmark = [
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="the write-behind is PostgreSQL's"
    ),
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(180),
]


def post_message(port: int, n: int) -> str:
    update = {
        "update_id": 70_000 + n,
        "message": {
            "message_id": n,
            "date": int(time.time()),
            "chat": {"id": CHAT, "type": "supergroup", "title": "G"},
            "from": {"id": 7_000 + n, "is_bot": False, "first_name": f"M{n}"},
            "text": "three words here",
        },
    }
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/telegram/webhook",
        data=json.dumps(update).encode(),
        headers={"Content-Type": "application/json", "X-Telegram-Bot-Api-Secret-Token": SECRET},
    )
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - loopback
        return str(response.headers["X-Update-Outcome"])


def stored_messages() -> int:
    rows = DailyUserStat.objects.filter(chat_id=CHAT)
    return int(rows.aggregate(total=Sum("message_count"))["total"] or 0)


@pytest.mark.parametrize("server", ["gunicorn", "granian"])
def test_a_stopped_web_server_writes_its_pending_adds_first(tmp_path: Path, server: str) -> None:
    port = free_port()
    metrics = tmp_path / "metrics"
    metrics.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "TELEGRAM_", "WEB_", "STATS_", "PROMETHEUS_"))
        and k not in ("DATABASE_URL", "REDIS_URL", "PORT", "HOST")
    }
    with private_redis() as redis_url:
        env.update(
            {
                "ENV_FILE": os.devnull,
                "DATABASE_URL": database_url(),
                "REDIS_URL": redis_url,
                "DJANGO_SECRET_KEY": "w" * 50,
                "TELEGRAM_WEBHOOK_SECRET": SECRET,
                "WEB_SERVER": server,
                "WEB_CONCURRENCY": "1",
                "HOST": "127.0.0.1",
                "PORT": str(port),
                "STATS_WRITE_BEHIND_MS": "1000",  # the longest: the adds wait in their epoch
                "PROMETHEUS_MULTIPROC_DIR": str(metrics),
            }
        )
        log = (tmp_path / "web.log").open("w")
        web = start_web(env, log)
        try:
            wait_until_healthy(port)
            outcomes = [post_message(port, n) for n in range(1, 7)]
            assert outcomes == ["processed"] * 6
            web.send_signal(signal.SIGTERM)
            assert web.wait(timeout=20) == 0
        finally:
            kill_group(web)
    assert stored_messages() == 6, (tmp_path / "web.log").read_text()[-3000:]
