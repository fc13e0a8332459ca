"""The web process's command line, shaped by the settings: ``WEB_SERVER`` (gunicorn, the
default, or granian), ``WEB_CONCURRENCY`` processes, ``WEB_THREADS`` threads in each,
``HOST`` and ``PORT``.

``manage.py serve`` runs it beside the worker; the image's command is ``python -m config.web``,
which reads the settings (a bad value stops it with one line and exit code 2) and replaces
itself with the server.

- **gunicorn** (gthread workers): an access line for every request except the probes and
  Telegram's accepted deliveries (``config/gunicorn_logging.py``).
- **granian** (a web server written in Rust, ``--interface wsgi``): the same application and
  settings; it serves a group message at about 1.3x gunicorn's rate on the same cores and a
  bare request at twice it (``bench/run.py``, part ``servers``). It writes no access lines:
  Django logs every answer of 400 or above, as under gunicorn. A worker that dies is started
  again.

Both finish the requests in flight within ``graceful_seconds`` of SIGTERM.
"""

from __future__ import annotations

import os
import sys

GRACEFUL_SECONDS = 8  # the image: requests in flight get this long, under docker's 10 s


def web_argv(graceful_seconds: int = GRACEFUL_SECONDS) -> list[str]:
    from django.conf import settings

    threads, processes = str(settings.WEB_THREADS), str(settings.WEB_CONCURRENCY)
    if settings.WEB_SERVER == "granian":
        return [
            sys.executable,
            "-m",
            "granian",
            "--interface",
            "wsgi",
            "--host",
            settings.HOST,
            "--port",
            str(settings.PORT),
            "--workers",
            processes,
            "--blocking-threads",
            threads,
            "--no-ws",
            "--respawn-failed-workers",
            "--workers-kill-timeout",
            str(graceful_seconds),
            "--log-level",
            "warning",
            "config.wsgi:application",
        ]
    return [
        sys.executable,
        "-m",
        "gunicorn",
        "config.wsgi",
        "--bind",
        f"{settings.HOST}:{settings.PORT}",
        "--workers",
        processes,
        "--threads",
        threads,
        "--worker-class",
        "gthread",
        "--graceful-timeout",
        str(graceful_seconds),
        "--access-logfile",
        "-",
        "--logger-class",
        "config.gunicorn_logging.QuietProbesLogger",
        "--log-level",
        "warning",
    ]


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from config.startup import load_environment, run_or_exit

    load_environment()
    argv = run_or_exit(web_argv)
    sys.stdout.flush()
    os.execv(argv[0], argv)  # noqa: S606 - our own interpreter, arguments from the settings


if __name__ == "__main__":
    main()
