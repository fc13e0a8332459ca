"""WSGI entry point: ``config.wsgi:application``, Django's own handler.

Each web worker imports this module, builds the application, imports every view (the URLconf
is otherwise loaded by the first request) and then moves what it has out of the collector's
sight (``gc.freeze``): the objects of Django and the app live as long as the process, and
without the freeze every full collection walks them again, a pause in which all of the
worker's threads wait.
"""

from __future__ import annotations

import gc
import os

from django.core.handlers.wsgi import WSGIHandler

from config.startup import load_environment, run_or_exit


def _application() -> WSGIHandler:
    from django.core.wsgi import get_wsgi_application
    from django.urls import get_resolver

    application = get_wsgi_application()
    get_resolver().url_patterns  # noqa: B018 - imports every view module now
    gc.collect()
    gc.freeze()
    return application


load_environment()
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = run_or_exit(_application)
