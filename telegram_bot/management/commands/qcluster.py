"""django-q2's ``qcluster`` with a bounded stop (see telegram_bot/processes.py).

SIGTERM or SIGINT stops the cluster within ``WORKER_STOP_SECONDS``: running tasks get that long
to finish, then the cluster's processes are killed. django-q2's own command waits for every
task however long it takes. This command takes its name because ``telegram_bot`` is listed
before ``django_q`` in INSTALLED_APPS. A database or Redis that does not answer stops it at
start with one line and exit code 2 (``config/startup.py``).
"""

from __future__ import annotations

import os
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from config.startup import check_services
from telegram_bot.processes import run_cluster


class Command(BaseCommand):
    help = "Start the django-q2 worker cluster; SIGTERM stops it within WORKER_STOP_SECONDS."

    def add_arguments(self, parser: CommandParser) -> None:
        # django-q2's own command's options.
        parser.add_argument("--run-once", action="store_true", help="Run once and then stop.")
        parser.add_argument(
            "-n", "--name", dest="cluster_name", default=None, help="The cluster's name."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        settings.SECRET_KEY  # noqa: B018 - the cluster signs tasks with it
        # One line and exit code 2 when the database or the broker's Redis is not there, before
        # the cluster forks processes that would each fail with a traceback.
        check_services()
        if options.get("cluster_name"):
            os.environ["Q_CLUSTER_NAME"] = options["cluster_name"]
        run_cluster(run_once=options.get("run_once", False))
