"""The statistics app's state for ``/metrics`` (``StatsConfig.metrics``): the backfill's
progress and the coverage of the days, read at scrape time."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.db.models import Count
from prometheus_client.core import GaugeMetricFamily

from stats.backfill import state_get
from stats.models import DailyCoverage


def collect() -> Iterator[Any]:
    state = state_get()
    running = GaugeMetricFamily(
        "tgcp_backfill_running", "1 while a statistics backfill run is under way."
    )
    running.add_metric([], 1.0 if state and state.status == "running" else 0.0)
    yield running
    keys = GaugeMetricFamily("tgcp_backfill_keys_done", "KV keys done by the current run.")
    keys.add_metric([], float(state.keys_done) if state else 0.0)
    yield keys
    finished = GaugeMetricFamily(
        "tgcp_backfill_last_finished_timestamp_seconds",
        "When the last backfill run finished (0: never).",
    )
    finished.add_metric([], state.finished_at.timestamp() if state and state.finished_at else 0)
    yield finished
    days = GaugeMetricFamily(
        "tgcp_backfill_coverage",
        "(chat, day, category) rows by coverage status.",
        labels=["status"],
    )
    rows = DailyCoverage.objects.values_list("status").annotate(n=Count("pk")).order_by()
    for status, n in rows:
        days.add_metric([status], n)
    yield days
