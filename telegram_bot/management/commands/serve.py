"""Run the web process (granian or gunicorn, ``config/web.py``) and the worker (django-q2)
together, in the foreground.

Used by the README's run command. A database or Redis that does not answer stops it before
either starts, with one line and exit code 2 (``config/startup.py``). Ctrl-C (SIGINT) or
SIGTERM stops both, and every process they started, within STOP_DEADLINE_SECONDS: each gets
SIGTERM (the web server finishes the requests in flight, the worker its tasks, both bounded),
and whatever still runs at the deadline is killed with its whole process group. Each child
runs in its own session, so the group holds all its descendants, and gets SIGTERM should this
process die without stopping it (Linux). If either process dies, the other is stopped too and
the command exits non-zero.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from config.startup import check_services
from config.web import check_port, web_argv

# Whole stop, signal to last process gone, stays under 10 s (docker's and systemd's default).
STOP_DEADLINE_SECONDS = 9.0
WEB_GRACEFUL_SECONDS = 5  # the web server: requests in flight get this long
PR_SET_PDEATHSIG = 1


class Command(BaseCommand):
    help = "Run the web process and the django-q2 worker together until Ctrl-C."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--no-worker", action="store_true", help="run the web process only")

    def handle(self, *args: Any, **options: Any) -> None:
        host, port = settings.HOST, settings.PORT
        commands = {"web": web_argv(WEB_GRACEFUL_SECONDS)}
        check_port()
        check_services()  # one line and exit code 2 when the database or Redis is not there
        if not options["no_worker"]:
            commands["worker"] = [sys.executable, "manage.py", "qcluster"]
        stopping = False

        def stop(signum: int, frame: object) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": _metrics_dir()}
        children = {
            name: subprocess.Popen(
                argv, env=env, start_new_session=True, preexec_fn=_die_with_parent
            )
            for name, argv in commands.items()
        }
        shown = "localhost" if host in ("127.0.0.1", "0.0.0.0", "::") else host  # noqa: S104
        self.stdout.write(
            f"Serving on http://{shown}:{port}/  (admin: /admin/, health: /healthz, /readyz)\n"
            f"Processes: {', '.join(f'{n} pid {c.pid}' for n, c in children.items())}. "
            "Press Ctrl-C to stop."
        )
        self.stdout.flush()
        failed = None
        while not stopping and failed is None:
            time.sleep(0.2)
            failed = next(
                (name for name, child in children.items() if child.poll() is not None), None
            )
        if failed:
            self.stderr.write(
                f"{failed} process exited with code {children[failed].returncode}; "
                "stopping the others"
            )
        _stop_all(children)
        self.stdout.write("Stopped.")
        if failed:
            raise SystemExit(1)


def _stop_all(children: dict[str, subprocess.Popen[bytes]]) -> None:
    """SIGTERM each child; at the deadline, SIGKILL each child's process group."""
    deadline = time.monotonic() + STOP_DEADLINE_SECONDS
    for child in children.values():
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
    for child in children.values():
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=max(0.05, deadline - time.monotonic()))
    for child in children.values():
        # The group outlives its leader when a grandchild is still running.
        _kill_group(child.pid)
        child.wait()


def _metrics_dir() -> str:
    """Where web and worker processes write their metrics (config/metrics.py adds them up):
    PROMETHEUS_MULTIPROC_DIR when set, else var/metrics, emptied at every start."""
    given = os.environ.get("PROMETHEUS_MULTIPROC_DIR", "").strip()
    if given:
        return given
    path = settings.VAR_DIR / "metrics"
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return str(path)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when ``serve`` dies (Linux), so no orphan remains."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
