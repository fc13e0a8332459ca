"""The run command's last step: web and worker together on the embedded default, stopped
cleanly by Ctrl-C, with either web server. Real processes on a throwaway SQLite database."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.ports import free_port
from tests.processes import wait_until_healthy

ROOT = Path(__file__).resolve().parents[2]


def get(url: str) -> tuple[int, bytes]:
    return fetch(urllib.request.Request(url))  # noqa: S310 - loopback only


def fetch(request: urllib.request.Request) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(request, timeout=5) as response:  # noqa: S310 - loopback
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def manage(env: dict[str, str], *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); look at its state.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.timeout(180)
@pytest.mark.parametrize("server", ["gunicorn", "granian"])
def test_serve_runs_web_and_worker_and_stops_on_ctrl_c(tmp_path: Path, server: str) -> None:
    port = free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE")
    }
    env.update(
        {
            "DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3",
            "PORT": str(port),
            "DJANGO_SECRET_KEY": "s" * 50,
            "DJANGO_DEBUG": "false",
            "Q_WORKERS": "1",
            "WEB_SERVER": server,
            "METRICS_TOKEN": "serve-metrics-token-0123456789",
            "TELEGRAM_WEBHOOK_SECRET": "serve-webhook-secret",
            "ENV_FILE": os.devnull,
            # Its own folder: var/static is read by other tests' processes meanwhile.
            "STATIC_ROOT": str(tmp_path / "static"),
        }
    )
    manage(env, "migrate", "--noinput")
    manage(env, "collectstatic", "--noinput")
    task_id = manage(
        env,
        "shell",
        "-v",
        "0",
        "-c",
        "from django_q.tasks import async_task; print(async_task('math.floor', 2.5))",
    )
    serve = subprocess.Popen(
        [sys.executable, "manage.py", "serve"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        banner = serve.stdout.readline() + serve.stdout.readline()  # type: ignore[union-attr]
        assert f"http://localhost:{port}/" in banner
        pids = [int(pid) for pid in re.findall(r"pid (\d+)", banner)]
        assert len(pids) == 2
        deadline = time.monotonic() + 60  # the server's start, then the worker's task
        wait_until_healthy(port, timeout=deadline - time.monotonic())
        status, body = get(f"http://127.0.0.1:{port}/healthz")
        assert (status, json.loads(body)["status"]) == (200, "ok")
        status, body = get(f"http://127.0.0.1:{port}/admin/login/")
        assert status == 200
        assert b"csrfmiddlewaretoken" in body
        # The printed address itself leads to the admin site's login (redirects followed).
        status, body = get(f"http://127.0.0.1:{port}/")
        assert status == 200 and b"csrfmiddlewaretoken" in body
        status, body = get(f"http://127.0.0.1:{port}/readyz")
        assert status == 200, body
        # A webhook call without the secret (401), then the metrics of every web process.
        refused = urllib.request.Request(
            f"http://127.0.0.1:{port}/telegram/webhook",
            data=b"{}",
            headers={"Content-Type": "application/json"},
        )
        assert fetch(refused)[0] == 401
        # A group message, accepted through the site's middleware (which makes no session
        # and no language negotiation for it) and left out of gunicorn's access log, which
        # still has the 401.
        message = {
            "update_id": 9_001,
            "message": {
                "message_id": 1,
                "date": int(time.time()),
                "chat": {"id": -100_900, "type": "supergroup", "title": "G"},
                "from": {"id": 901, "is_bot": False, "first_name": "A"},
                "text": "two words",
            },
        }
        accepted = urllib.request.Request(
            f"http://127.0.0.1:{port}/telegram/webhook",
            data=json.dumps(message).encode(),
            headers={
                "Content-Type": "application/json",
                "X-Telegram-Bot-Api-Secret-Token": "serve-webhook-secret",
            },
        )
        with urllib.request.urlopen(accepted, timeout=10) as response:  # noqa: S310 - loopback
            assert response.status == 200
            assert response.headers["X-Update-Outcome"] == "processed"
            assert response.headers["Vary"] is None and response.headers["Set-Cookie"] is None
            assert int(response.headers["Content-Length"]) == len(response.read())
        scrape = urllib.request.Request(
            f"http://127.0.0.1:{port}/metrics",
            headers={"Authorization": "Bearer serve-metrics-token-0123456789"},
        )
        status, body = fetch(scrape)
        assert status == 200, body
        assert b'tgcp_webhook_request_seconds_count{status="401"} 1.0' in body
        assert b'tgcp_jobs{status="queued"}' in body
        # The worker picks up the task queued in the ORM broker before it started.
        check = (
            "from django_q.models import Task; "
            f"t = Task.objects.filter(id='{task_id.strip()}').first(); "
            "print(t.result if t else 'pending')"
        )
        while (
            time.monotonic() < deadline
            and manage(env, "shell", "-v", "0", "-c", check).strip() != "2"
        ):
            time.sleep(0.5)
        assert manage(env, "shell", "-v", "0", "-c", check).strip() == "2"
    finally:
        os.killpg(serve.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        output = serve.communicate(timeout=60)[0]
    assert serve.returncode == 0, output
    assert "Stopped." in output
    assert '"POST /telegram/webhook HTTP/1.1" 200' not in output
    if server == "gunicorn":
        assert '"POST /telegram/webhook HTTP/1.1" 401' in output
    else:  # granian writes no access lines; Django logs the refusal
        assert "Unauthorized: /telegram/webhook" in output
        assert '"POST /telegram/webhook HTTP/1.1"' not in output
    assert not any(alive(pid) for pid in pids)
