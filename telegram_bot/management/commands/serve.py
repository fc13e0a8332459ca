"""Run the web process (gunicorn) and the worker (django-q2) together, in the foreground.

Used by the README's run command. Ctrl-C (SIGINT) or SIGTERM stops both cleanly; if either
process dies, the other is stopped too and the command exits non-zero.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

STOP_GRACE_SECONDS = 20


class Command(BaseCommand):
    help = "Run the web process and the django-q2 worker together until Ctrl-C."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--no-worker", action="store_true", help="run the web process only")

    def handle(self, *args: Any, **options: Any) -> None:
        host, port = settings.HOST, settings.PORT
        commands = {
            "web": [
                sys.executable,
                "-m",
                "gunicorn",
                "config.wsgi",
                "--bind",
                f"{host}:{port}",
                "--workers",
                str(settings.WEB_CONCURRENCY),
                "--threads",
                "4",
                "--worker-class",
                "gthread",
                "--graceful-timeout",
                "15",
                "--access-logfile",
                "-",
                "--log-level",
                "warning",
            ],
        }
        if not options["no_worker"]:
            commands["worker"] = [sys.executable, "manage.py", "qcluster"]
        children = {name: subprocess.Popen(argv) for name, argv in commands.items()}
        stopping = False

        def stop(signum: int, frame: object) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
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
    for child in children.values():
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_SECONDS
    for child in children.values():
        try:
            child.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
