"""KV state layer throughput per backend, as ratios to a baseline measured in the same run.

For each backend available (the database backend on the configured database, Redis when
REDIS_URL is set) it times the contract's hot operations and prints operations per second next
to the same operations on the in-process memory backend and, for Redis, next to the raw redis-py
command (what our validation, JSON encoding and Lua scripts cost). Nothing is asserted.

    DJANGO_SETTINGS_MODULE=config.settings_test .venv/bin/python bench/kv_backends.py [--ops N]

It uses a throwaway SQLite file (or, with DATABASE_URL, a `bench_` database it creates and drops).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings_test")


def rate(operation: Callable[[int], object], count: int) -> float:
    start = time.perf_counter()
    for i in range(count):
        operation(i)
    return count / (time.perf_counter() - start)


def measure(store: object, count: int) -> dict[str, float]:
    from telegram_bot.state import Increment, KVStore, Put

    assert isinstance(store, KVStore)
    run = uuid.uuid4().hex[:6]
    return {
        "set": rate(lambda i: store.set(f"session:{run}:{i}", {"n": i, "name": "x"}), count),
        "get": rate(lambda i: store.get(f"session:{run}:{i}"), count),
        "increment": rate(lambda i: store.increment(f"counter:{run}:{i % 50}"), count),
        "compare_and_set": rate(
            lambda i: store.compare_and_set(f"lock:{run}:{i}", None, i, ttl_ms=60_000), count
        ),
        "apply_once(4 ops)": rate(
            lambda i: store.apply_once(
                f"upd:{run}:{i}",
                {"s": "done"},
                [
                    Increment(f"stats:{run}:{i % 20}:m"),
                    Increment(f"stats:{run}:{i % 20}:w", 5),
                    Increment(f"activity:{run}"),
                    Put(f"last_message:{run}:{i % 20}", i),
                ],
            ),
            count,
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=2000, help="operations per measurement")
    args = parser.parse_args()

    import django
    from django.conf import settings
    from django.test.utils import setup_test_environment

    django.setup()
    setup_test_environment()
    from django.test.utils import get_runner

    runner = get_runner(settings)(verbosity=0, interactive=False)
    old = runner.setup_databases()
    try:
        from telegram_bot.state import open_store

        baseline = measure(open_store("memory://"), args.ops)
        backends = {"database": open_store("db://")}
        if os.environ.get("REDIS_URL"):
            backends["redis"] = open_store(
                os.environ["REDIS_URL"], prefix=f"bench{uuid.uuid4().hex[:6]}:"
            )
        vendor = __import__("django.db").db.connection.vendor
        print(f"{args.ops} operations each; ratios are backend / memory backend (same run)")
        for name, store in backends.items():
            results = measure(store, args.ops)
            label = f"{name} ({vendor})" if name == "database" else name
            print(f"\n{label}")
            for op, ops_per_s in results.items():
                print(
                    f"  {op:20} {ops_per_s:10.0f} ops/s   x{ops_per_s / baseline[op]:.3f} of memory"
                )
        if "redis" in backends:
            client = backends["redis"].client  # type: ignore[attr-defined]
            raw = rate(
                lambda i: client.incrby(f"{backends['redis'].prefix}raw:{i % 50}", 1), args.ops
            )
            ours = rate(lambda i: backends["redis"].increment(f"counter:{i % 50}"), args.ops)
            print(
                f"\nredis increment: ours {ours:.0f} ops/s vs raw INCRBY {raw:.0f} ops/s "
                f"(x{ours / raw:.2f})"
            )
            for key in client.scan_iter(match=f"{backends['redis'].prefix}*"):
                client.delete(key)
    finally:
        runner.teardown_databases(old)


if __name__ == "__main__":
    main()
