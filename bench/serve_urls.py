"""The URLs ``bench/run.py`` serves: the product's, the bare django-ninja endpoint
(``bench/urls.py``) and a second baseline that runs one Redis script per request."""

from __future__ import annotations

import json

import redis
from django.conf import settings
from django.http import HttpRequest
from django.urls import path
from ninja import NinjaAPI

from bench.urls import urlpatterns as bench_urlpatterns

# What an idempotent counter needs at the least: claim the update id, add one, in one step.
CLAIM_AND_COUNT = """
if not redis.call('SET', KEYS[1], '1', 'NX', 'PX', ARGV[1]) then return 0 end
return redis.call('INCRBY', KEYS[2], 1)
"""
redis_api = NinjaAPI(urls_namespace="bench-redis", docs_url=None, openapi_url=None)
_script = None


@redis_api.post("/redis")
def one_redis_script(request: HttpRequest) -> dict[str, bool]:
    global _script
    if _script is None:
        _script = redis.Redis.from_url(settings.REDIS_URL).register_script(CLAIM_AND_COUNT)
    update_id = json.loads(request.body)["update_id"]
    _script(keys=[f"base:upd:{update_id}", "base:count"], args=[3_600_000])
    return {"ok": True}


urlpatterns = [*bench_urlpatterns, path("bench/", redis_api.urls)]
