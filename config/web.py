"""The web process's command line, shaped by the settings: ``WEB_SERVER`` (granian, the
default, or gunicorn), ``WEB_CONCURRENCY`` processes, ``WEB_THREADS`` threads in each,
``WEB_BACKPRESSURE`` connections each serves at once, ``WEB_HEADER_TIMEOUT_SECONDS``, ``HOST``
and ``PORT`` (``config/settings.py`` says what each means under each server).

``manage.py serve`` runs it beside the worker; the image's command is ``python -m config.web``,
which reads the settings (a bad value stops it with one line and exit code 2), checks that the
database and Redis answer (``config/startup.py``: one line and exit code 2 when not), and
replaces itself with the server.

- **granian** (a web server written in Rust, ``--interface wsgi``, HTTP/1 only): the
  connections, their headers and the idle keep-alive are handled in Rust, so a client slow to
  send its headers holds no Python thread and is cut off after the header timeout; a request
  whose headers are in gets a thread, which waits for a slow body with the GIL released (no
  server bounds that wait: the proxy in front does). Its threads are started as requests wait
  and end after 30 s idle. It serves a group message at about 1.3x gunicorn gthread's rate on
  the same cores (``bench/run.py``, part ``servers``). It writes no access lines: Django logs
  every answer of 400 or above. A worker that dies is started again.
- **gunicorn** (``WEB_SERVER=gunicorn``, its stock ``gthread`` worker): a thread reads each
  request, headers and body, from its first byte with no time bound, so ``WEB_CONCURRENCY x
  WEB_THREADS`` slow clients stop it: serve it behind a buffering proxy only. An access line
  for every request except the probes and Telegram's accepted deliveries
  (``config/gunicorn_logging.py``). Each worker listens on a socket of its own
  (``--reuse-port``), so the kernel spreads new connections over the workers
  (``tests/integration/test_web_balance.py``).

Both finish the requests in flight within ``graceful_seconds`` of SIGTERM (granian: each of
its processes within its share of them).
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
    connections = str(settings.WEB_BACKPRESSURE)
    header_seconds = settings.WEB_HEADER_TIMEOUT_SECONDS
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
            "--backpressure",
            connections,
            # HTTP/1 only: the header timeout below is HTTP/1's (no cleartext HTTP/2 around it).
            "--http",
            "1",
            "--http1-header-read-timeout",
            str(header_seconds * 1000),
            "--no-ws",
            "--respawn-failed-workers",
            # granian stops its workers one after the other, each within this timeout, so
            # the whole stop stays within graceful_seconds even when every worker has to be
            # killed (a worker still loading the application when SIGTERM comes never sees it).
            "--workers-kill-timeout",
            str(max(1, graceful_seconds // settings.WEB_CONCURRENCY)),
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
        "--worker-class",
        "gthread",
        "--threads",
        threads,
        "--worker-connections",
        connections,
        "--keep-alive",
        str(header_seconds),
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
    """Whether a server already listens on ``host:port``. Both servers bind with
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
    from config.startup import check_services, load_environment, run_or_exit

    load_environment()
    argv = run_or_exit(web_argv)
    check_port()
    check_services()
    sys.stdout.flush()
    os.execv(argv[0], argv)  # noqa: S606 - our own interpreter, arguments from the settings


if __name__ == "__main__":
    main()
