"""A benchmark-only variant of the product: group messages counted in the KV store only.

``bench/run.py`` serves it beside the product (``bench.settings_kv_only``) to measure what the
live writer's database add costs a group message, in the same run: the same server, pipeline,
claim, KV commit and done-marker, with ``stats.services.count_once`` reduced to the KV commit.
It is an experiment, never a mode of the product: without the add the database misses every
count until the backfill rebuilds the day, and nothing orders the KV commit against the
backfill (``stats/README.md``, Ordering).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from django.apps import AppConfig


def count_in_kv_only(*, store: Any, commit: Callable[[], bool], rows: Sequence[Any]) -> bool:
    return commit()


class KvOnlyConfig(AppConfig):
    name = "bench.kv_only"
    label = "bench_kv_only"

    def ready(self) -> None:
        from stats import services

        services.count_once = count_in_kv_only
