"""WSGI entry point: ``gunicorn config.wsgi``.

Each web worker imports this module, builds the application, imports every view (the URLconf
is otherwise loaded by the first request) and then freezes what it has (``gc.freeze``): the
hundred thousand objects of Django and the app stay alive for the process's life, and without
the freeze every full collection walks them again, a pause of tens of milliseconds (about 120 ms
on a busy two-core machine) in which all of the worker's threads wait for the GIL: the slowest
percent of webhook answers.
"""

from __future__ import annotations

import gc
import os

from django.core.handlers.wsgi import WSGIHandler
from django.core.wsgi import get_wsgi_application

from config.startup import load_environment, run_or_exit


def _application() -> WSGIHandler:
    application = get_wsgi_application()
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018 - imports every view module now
    gc.collect()
    gc.freeze()
    return application


load_environment()
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = run_or_exit(_application)
