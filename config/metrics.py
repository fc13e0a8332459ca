"""``GET /metrics``: Prometheus text format, for a scraper holding ``METRICS_TOKEN``.

Unset ``METRICS_TOKEN`` and the endpoint does not exist (404); with it, a request without
``Authorization: Bearer <token>`` gets 401. Besides the event counters of telegram_bot.metrics
(added up over the processes of this machine when ``PROMETHEUS_MULTIPROC_DIR`` is set), a scrape
reads the state that lives in the database: jobs by status and the age of the oldest, when a
worker last finished a task, and what each feature app reports of its own state (its
``FeatureConfig.metrics``: the statistics backfill's progress), so that ``config`` names no
feature.
"""

from __future__ import annotations

import hmac
import logging
import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from django.conf import settings
from django.db import DatabaseError
from django.db.models import Count, Min
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from telegram_bot import metrics as _instruments  # noqa: F401 - registers the event metrics
from telegram_bot.features import metric_collectors
from telegram_bot.ops.health import worker_last_seen

log = logging.getLogger(__name__)


@never_cache
@require_GET
def metrics_view(request: HttpRequest) -> HttpResponse:
    token = settings.METRICS_TOKEN
    if not token:
        return HttpResponse("Not Found\n", status=404, content_type="text/plain")
    given = request.headers.get("Authorization", "")
    if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
        response = HttpResponse("Unauthorized\n", status=401, content_type="text/plain")
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    return HttpResponse(generate_latest(registry()), content_type=CONTENT_TYPE_LATEST)


def registry() -> CollectorRegistry:
    """The event metrics (of every process of this machine, in multiprocess mode) plus the state
    read now."""
    path = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if path:
        combined = CollectorRegistry()
        multiprocess.MultiProcessCollector(combined, path)
    else:
        combined = CollectorRegistry()
        combined.register(_Default())
    combined.register(StateCollector())
    return combined


class _Default(Collector):
    """This process's own metrics (no multiprocess directory: tests, ``runbot``)."""

    def collect(self) -> Iterator[Any]:
        yield from REGISTRY.collect()


class StateCollector(Collector):
    """Gauges read from the database at scrape time; a part that fails is left out and logged,
    never failing the scrape."""

    def collect(self) -> Iterator[Any]:
        parts: list[tuple[str, Callable[[], Iterable[Any]]]] = [
            ("jobs", self._jobs),
            ("worker", self._worker),
        ]
        parts += [(label, collect) for label, collect in metric_collectors()]
        for name, part in parts:
            try:
                yield from part()
            except DatabaseError as exc:
                log.warning("metrics: %s skipped: %s", name, exc)

    def _jobs(self) -> Iterator[Any]:
        from telegram_bot.jobs.models import Job, JobStatus

        now = timezone.now()
        count = GaugeMetricFamily("tgcp_jobs", "Jobs by status.", labels=["status"])
        counts = dict(Job.objects.values_list("status").annotate(n=Count("id")).order_by())
        for status in JobStatus.values:
            count.add_metric([status], counts.get(status, 0))
        yield count
        age = GaugeMetricFamily(
            "tgcp_jobs_oldest_age_seconds",
            "Queued: how long the oldest due job has waited. Running: how long the oldest "
            "running job has run. 0 when there is none.",
            labels=["status"],
        )
        due = Job.objects.filter(status=JobStatus.QUEUED, next_attempt__lte=now).aggregate(
            t=Min("next_attempt")
        )["t"]
        running = Job.objects.filter(status=JobStatus.RUNNING).aggregate(t=Min("started_at"))["t"]
        age.add_metric(["queued"], (now - due).total_seconds() if due else 0.0)
        age.add_metric(["running"], (now - running).total_seconds() if running else 0.0)
        yield age

    def _worker(self) -> Iterator[Any]:
        seen = worker_last_seen()
        age = GaugeMetricFamily(
            "tgcp_worker_last_task_age_seconds",
            "Seconds since a worker cluster last finished a task (-1: never).",
        )
        age.add_metric([], (timezone.now() - seen).total_seconds() if seen else -1.0)
        yield age
