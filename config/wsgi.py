"""WSGI entry point: ``gunicorn config.wsgi``.

Each web worker imports this module, builds the application, imports every view (the URLconf
is otherwise loaded by the first request) and then freezes what it has (``gc.freeze``): the
hundred thousand objects of Django and the app stay alive for the process's life, and without
the freeze every full collection walks them again, a pause of tens of milliseconds (about 120 ms
on a busy two-core machine) in which all of the worker's threads wait for the GIL: the slowest
percent of webhook answers.

The handler is Django's with Telegram's deliveries on a chain of their own, past the browser
middleware (``telegram_bot/transport/wsgi.py``).
"""

from __future__ import annotations

import gc
import os

import django
from django.core.handlers.wsgi import WSGIHandler

from config.startup import load_environment, run_or_exit


def _application() -> WSGIHandler:
    django.setup(set_prefix=False)  # as django.core.wsgi.get_wsgi_application does
    from django.urls import get_resolver

    from telegram_bot.transport.wsgi import Application

    application = Application()

    get_resolver().url_patterns  # noqa: B018 - imports every view module now
    gc.collect()
    gc.freeze()
    return application


load_environment()
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = run_or_exit(_application)
