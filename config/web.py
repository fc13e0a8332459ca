"""The web process's command line, shaped by the settings: ``WEB_SERVER`` (gunicorn, the
default, or granian), ``WEB_CONCURRENCY`` processes, ``WEB_THREADS`` threads in each,
``HOST`` and ``PORT``.

``manage.py serve`` runs it beside the worker; the image's command is ``python -m config.web``,
which reads the settings (a bad value stops it with one line and exit code 2) and replaces
itself with the server.

- **gunicorn** (threaded workers whose threads take requests off one epoll set themselves,
  ``config/gunicorn_worker.py``: gthread's hand-offs between its threads cost a group message
  an eighth of a worker's CPU): an access line for every request except the probes and
  Telegram's accepted deliveries (``config/gunicorn_logging.py``). Each worker listens on a
  socket of its own (``--reuse-port``), so the kernel spreads new connections over the
  workers. From the one socket they shared, the worker that woke first took each connection,
  and a busy one wakes first: a few keep-alive connections (Telegram's, or a proxy's) could
  all land on one worker and leave the other idle (``tests/integration/test_web_balance.py``).
- **granian** (a web server written in Rust, ``--interface wsgi``): the same application and
  settings; it serves a group message at about 1.3x gunicorn's rate on the same cores and a
  bare request at twice it (``bench/run.py``, part ``servers``). It writes no access lines:
  Django logs every answer of 400 or above, as under gunicorn. A worker that dies is started
  again.

Both finish the requests in flight within ``graceful_seconds`` of SIGTERM.
"""

from __future__ import annotations

import errno
import os
import socket
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
        "config.gunicorn_worker.EpollThreadWorker",  # gthread's, without its hand-offs
        "--reuse-port",  # a listening socket per worker: the kernel spreads the connections
        "--graceful-timeout",
        str(graceful_seconds),
        "--access-logfile",
        "-",
        "--logger-class",
        "config.gunicorn_logging.QuietProbesLogger",
        "--log-level",
        "warning",
    ]


def port_in_use(host: str, port: int) -> bool:
    """Whether a server already listens on ``host:port``. gunicorn's workers bind with
    ``SO_REUSEPORT``, which would let a second server share the port with one still running
    (of the same user) instead of failing: this plain bind finds it first."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror:
        return False  # the server says what is wrong with the address
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the servers do
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return True
    return False


def check_port() -> None:
    """Stop with one line when the web process's address is taken."""
    from django.conf import settings

    if port_in_use(settings.HOST, settings.PORT):
        sys.stderr.write(
            f"{settings.HOST}:{settings.PORT} is in use: is the server already running? "
            "(PORT sets another port)\n"
        )
        raise SystemExit(1)


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from config.startup import load_environment, run_or_exit

    load_environment()
    argv = run_or_exit(web_argv)
    check_port()
    sys.stdout.flush()
    os.execv(argv[0], argv)  # noqa: S606 - our own interpreter, arguments from the settings


if __name__ == "__main__":
    main()
