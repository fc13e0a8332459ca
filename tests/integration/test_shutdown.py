"""Clean shutdown with real signals: ``make run`` on Ctrl-C or SIGTERM, and ``qcluster`` alone on
SIGTERM (what ``docker stop`` sends), each while a worker is stuck in a 300 s task. Without a
bounded stop the worker waits for the task (the issue saw over 10 minutes), and processes are
left running; ``ps`` must show none of the tree once the parent has exited.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from telegram_bot.management.commands.serve import STOP_DEADLINE_SECONDS
from tests.ports import free_port
from tests.processes import kill_group

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(240)
SLACK_SECONDS = 3.0  # process start-up and teardown on a loaded two-core machine


def ps_tree(root: int) -> list[int]:
    """``root``'s descendants, as ``ps`` lists them."""
    out = subprocess.run(
        ["ps", "-eo", "pid=,ppid="], capture_output=True, text=True, check=True
    ).stdout
    children: dict[int, list[int]] = {}
    for line in out.splitlines():
        pid, ppid = (int(part) for part in line.split())
        children.setdefault(ppid, []).append(pid)
    found, queue = [], [root]
    while queue:
        for child in children.get(queue.pop(), []):
            found.append(child)
            queue.append(child)
    return found


def ps_running(pids: list[int]) -> list[int]:
    """Those of ``pids`` that ``ps`` still lists, zombies excluded."""
    if not pids:
        return []
    out = subprocess.run(
        ["ps", "-o", "pid=,stat=", "-p", ",".join(map(str, pids))],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    return [
        int(line.split()[0]) for line in out.splitlines() if not line.split()[1].startswith("Z")
    ]


class Output:
    """Collects a process's merged output lines in a thread."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self.thread = threading.Thread(target=self._read, args=(process,), daemon=True)
        self.thread.start()

    def _read(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            self.lines.append(line)

    def wait_for(self, text: str, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while not any(text in line for line in self.lines):
            assert time.monotonic() < deadline, f"no {text!r} in:\n{''.join(self.lines)}"
            time.sleep(0.1)

    @property
    def text(self) -> str:
        return "".join(self.lines)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """A throwaway SQLite installation (the ORM broker)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE", "PORT")
    }
    env.update(
        {
            "ENV_FILE": os.devnull,
            "DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3",
            "PORT": str(free_port()),
            "DJANGO_SECRET_KEY": "s" * 50,
            "DJANGO_DEBUG": "false",
            "Q_WORKERS": "1",
            "LOG_LEVEL": "INFO",
            "Q_LOG_LEVEL": "INFO",  # the test waits for the worker's "processing" line
            "PYTHONUNBUFFERED": "1",
        }
    )
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
        cwd=ROOT,
        env=env,
        check=True,
        timeout=120,
    )
    return env


def queue_sleep(env: dict[str, str]) -> None:
    """Queue a task that sleeps 300 s, in ``env``'s broker."""
    code = "from django_q.tasks import async_task as a; a('time.sleep', 300)"
    subprocess.run(
        [sys.executable, "manage.py", "shell", "-v", "0", "-c", code],
        cwd=ROOT,
        env=env,
        check=True,
        timeout=120,
    )


def stop_and_measure(
    process: subprocess.Popen[str], send: object, budget: float
) -> tuple[float, list[int]]:
    """Signal (``send()``), wait for ``process`` to exit; the time it took and the processes of
    its tree that are still running."""
    tree = ps_tree(process.pid)
    assert tree, "the process started no children"
    started = time.monotonic()
    send()  # type: ignore[operator]
    try:
        process.wait(timeout=budget + 60)
    finally:
        kill_group(process)
    elapsed = time.monotonic() - started
    time.sleep(0.2)  # let the kernel finish reaping
    return elapsed, ps_running(tree)


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
@pytest.mark.parametrize("how", ["ctrl-c", "sigterm"])
def test_make_run_stops_everything_within_the_deadline(env: dict[str, str], how: str) -> None:
    venv = Path(sys.prefix)
    queue_sleep(env)
    make = subprocess.Popen(
        ["make", "-s", "-o", f"{venv}/.runtime", "run", f"VENV={venv}"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group, like a shell's job in a terminal
    )
    output = Output(make)
    output.wait_for("Serving on")
    output.wait_for("processing")  # the worker is inside the 300 s task
    if how == "ctrl-c":
        send = lambda: os.killpg(make.pid, signal.SIGINT)  # noqa: E731 - the terminal's way
    else:
        send = lambda: make.send_signal(signal.SIGTERM)  # noqa: E731 - make alone
    elapsed, left = stop_and_measure(make, send, STOP_DEADLINE_SECONDS)
    print(f"make run stopped by {how} in {elapsed:.1f} s")
    assert left == [], f"still running: {left}\n{output.text}"
    assert elapsed < STOP_DEADLINE_SECONDS + SLACK_SECONDS, output.text
    assert "Stopped." in output.text


@pytest.mark.parametrize("broker", ["orm", "redis"])
def test_qcluster_alone_stops_within_worker_stop_seconds(env: dict[str, str], broker: str) -> None:
    env = {**env, "WORKER_STOP_SECONDS": "3"}
    if broker == "redis":
        if not os.environ.get("REDIS_URL"):
            pytest.skip("the Redis broker: REDIS_URL not set")
        # The production broker, on this run's Redis database: tasks other tests queued
        # there (never run, signed with another key) are dropped first.
        env["REDIS_URL"] = os.environ["REDIS_URL"]
        purge = "from django_q.brokers import get_broker; get_broker().purge_queue()"
        subprocess.run(
            [sys.executable, "manage.py", "shell", "-v", "0", "-c", purge],
            cwd=ROOT,
            env=env,
            check=True,
            timeout=60,
        )
    queue_sleep(env)
    cluster = subprocess.Popen(
        [sys.executable, "manage.py", "qcluster"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    output = Output(cluster)
    output.wait_for("processing")
    elapsed, left = stop_and_measure(cluster, lambda: cluster.send_signal(signal.SIGTERM), 3)
    print(f"qcluster stopped by SIGTERM in {elapsed:.1f} s")
    assert left == [], f"still running: {left}\n{output.text}"
    assert elapsed < 3 + SLACK_SECONDS, output.text
    assert "still busy after 3 s, killed" in output.text
    assert cluster.returncode == 0


def test_an_idle_qcluster_stops_without_killing(env: dict[str, str]) -> None:
    cluster = subprocess.Popen(
        [sys.executable, "manage.py", "qcluster"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    output = Output(cluster)
    output.wait_for("running.")
    _, left = stop_and_measure(cluster, lambda: cluster.send_signal(signal.SIGTERM), 7)
    assert left == []
    assert "killed" not in output.text
    assert cluster.returncode == 0
