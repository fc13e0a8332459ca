"""The product's URLs and ``/test/exit``, whose view raises ``SystemExit`` (as a ``sys.exit()``
deep in some library would): under gunicorn it must stop the worker, which the arbiter
replaces, not end a serving thread and leave the worker with one fewer."""

from __future__ import annotations

from typing import NoReturn

from django.http import HttpRequest
from django.urls import path

from config.urls import urlpatterns as product_urlpatterns


def exit_view(request: HttpRequest) -> NoReturn:
    raise SystemExit(3)


urlpatterns = [*product_urlpatterns, path("test/exit", exit_view)]
