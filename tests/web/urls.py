"""The product's URLs and ``/test/exit?code=N``, whose view raises ``SystemExit(N)`` (as a
``sys.exit()`` deep in some library would): the server must serve on with all its threads
(granian answers 500; gunicorn's worker exits and its arbiter starts another, except for codes
3 and 4, which gunicorn reads as a worker that cannot boot and stops altogether)."""

from __future__ import annotations

from typing import NoReturn

from django.http import HttpRequest
from django.urls import path

from config.urls import urlpatterns as product_urlpatterns


def exit_view(request: HttpRequest) -> NoReturn:
    raise SystemExit(int(request.GET.get("code", "1")))


urlpatterns = [*product_urlpatterns, path("test/exit", exit_view)]
