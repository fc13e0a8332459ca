"""The product's URLs and two test views.

``/test/exit?code=N`` raises ``SystemExit(N)`` (as a ``sys.exit()`` deep in some library
would): the server must serve on with all its threads (granian answers 500; gunicorn's worker
exits and its arbiter starts another, except for codes 3 and 4, which gunicorn reads as a
worker that cannot boot and stops altogether).

``/test/forwarded`` answers what the web process was told about the client: the
``X-Forwarded-*`` headers a proxy in front set, and the address ``django-axes`` counts failed
logins for (``telegram_bot/login_throttle.py``).
"""

from __future__ import annotations

from typing import NoReturn

from django.http import HttpRequest, JsonResponse
from django.urls import path

from config.urls import urlpatterns as product_urlpatterns
from telegram_bot.login_throttle import client_ip


def exit_view(request: HttpRequest) -> NoReturn:
    raise SystemExit(int(request.GET.get("code", "1")))


def forwarded_view(request: HttpRequest) -> JsonResponse:
    return JsonResponse(
        {
            "x_forwarded_for": request.META.get("HTTP_X_FORWARDED_FOR"),
            "x_forwarded_proto": request.META.get("HTTP_X_FORWARDED_PROTO"),
            "host": request.META.get("HTTP_HOST"),
            "client_ip": client_ip(request),
        }
    )


urlpatterns = [
    *product_urlpatterns,
    path("test/exit", exit_view),
    path("test/forwarded", forwarded_view),
]
