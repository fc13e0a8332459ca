"""The product's URLs plus a bare django-ninja endpoint, the baseline of ``bench/update_path``."""

from __future__ import annotations

from django.http import HttpRequest
from django.urls import path
from ninja import NinjaAPI

from config.urls import urlpatterns as product_urlpatterns

bare_api = NinjaAPI(urls_namespace="bench-bare", docs_url=None, openapi_url=None)


@bare_api.post("/bare")
def bare(request: HttpRequest) -> dict[str, bool]:
    return {"ok": True}


urlpatterns = [*product_urlpatterns, path("bench/", bare_api.urls)]
