from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.urls import include, path
from django.views.generic import RedirectView

from config.api import api
from config.metrics import metrics_view
from telegram_bot.ops import health
from telegram_bot.transport import webhook


def favicon(request: HttpRequest) -> HttpResponse:
    """Browsers ask every site for /favicon.ico: an empty answer, cached for a day, instead of a
    404 logged as a warning on each page an operator opens."""
    response = HttpResponse(status=204)
    response["Cache-Control"] = "public, max-age=86400"
    return response


urlpatterns = [
    # The address `manage.py serve` prints: operators land on the admin site.
    path("", RedirectView.as_view(pattern_name="admin:index"), name="home"),
    path("favicon.ico", favicon, name="favicon"),
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", metrics_view, name="metrics"),
    path("telegram/", webhook.webhook_api.urls),
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
    # The Mini App of the groups' own admins (webapp/): its own sessions, never the admin's.
    path("app/", include("webapp.urls")),
]
