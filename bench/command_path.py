"""Where a command and a button press spend their work, in process: round trips counted (SQL
statements, Redis commands, Bot API calls) and CPU time profiled.

The product runs with its production settings (``bench.settings``) on a fresh PostgreSQL
database, the Redis of ``REDIS_URL`` and the fake Bot API (``bench/fake_api.py``, its own
process so that its CPU is not in the profile). Updates go through Django's test client into
``/telegram/webhook``, the same bodies as ``bench/run.py --only commands`` sends. Served
throughput is the work of ``bench/run.py``; this script says what to attack.

    DATABASE_URL=... REDIS_URL=... python bench/command_path.py [--updates 300]
                                                                [--profile bench/profiles]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import harness, load  # noqa: E402

SECRET_HEADER = "HTTP_X_TELEGRAM_BOT_API_SECRET_TOKEN"  # noqa: S105 - a header name
KINDS = ("start", "callback")
MESSAGES = 20_000  # the owner's messages in the fake whose buttons are pressed, each once
_next_message = [1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--updates", type=int, default=300, help="updates per kind and pass")
    parser.add_argument("--profile", type=Path, help="write the profiles here")
    args = parser.parse_args()
    database_url, redis_url = os.environ.get("DATABASE_URL"), os.environ.get("REDIS_URL")
    if not database_url or not redis_url:
        raise SystemExit("set DATABASE_URL (PostgreSQL) and REDIS_URL")
    port = harness.free_port()
    fake = subprocess.Popen(
        [sys.executable, str(ROOT / "bench" / "fake_api.py"), str(port), str(MESSAGES)],
        stdout=subprocess.PIPE,
    )
    try:
        assert fake.stdout is not None
        fake.stdout.readline()  # "fake Bot API on ...": it serves
        session = harness.Session(database_url, redis_url, quick=True, offline=True)
        env = session.env(
            database_url,
            DJANGO_SETTINGS_MODULE="bench.settings",
            TELEGRAM_API_BASE_URL=f"http://127.0.0.1:{port}",
        )
        os.environ.update(env)
        import django

        django.setup()
        from django.db import connection

        old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
        try:
            report = run(args)
        finally:
            connection.creation.destroy_test_db(old_name, verbosity=0)
    finally:
        fake.terminate()
        fake.wait()
    print(report)
    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)
        target = args.profile / f"command_path-{_revision()}.txt"
        target.write_text(report)
        print(f"written to {target}")


def run(args: argparse.Namespace) -> str:
    from django.conf import settings
    from django.test import Client

    client = Client()
    headers = {SECRET_HEADER: settings.TELEGRAM_WEBHOOK_SECRET, "HTTP_HOST": "127.0.0.1"}
    ids = iter(range(10_000_000, 10**9, 1_000_000))
    out = [cpu_ratios(client, headers, ids)]
    for kind in KINDS:
        n = args.updates
        send(client, headers, kind, next(ids), n)  # warm: caches, connections
        with counting() as counts:
            send(client, headers, kind, next(ids), n)
        out.append(f"{kind}: round trips per update ({n} updates)")
        out += [f"  {count / n:6.2f}  {name}" for name, count in sorted(counts.items())]
        profiler = cProfile.Profile(time.process_time)
        first = next(ids)
        started = time.process_time()
        profiler.enable()
        send(client, headers, kind, first, n)
        profiler.disable()
        out.append(f"  {(time.process_time() - started) / n * 1000:6.2f}  ms CPU per update")
        text = io.StringIO()
        stats = pstats.Stats(profiler, stream=text).strip_dirs()
        stats.sort_stats("cumulative").print_stats(60)
        stats.sort_stats("tottime").print_stats(30)
        stats.sort_stats("cumulative").print_stats(r"telegram_bot|handlers|features", 40)
        out.append(text.getvalue())
    return "\n".join(out)


def cpu_ratios(client: Any, headers: dict[str, str], ids: Iterator[int], rounds: int = 5) -> str:
    """CPU time of this process per request, bare endpoint against each kind, alternating
    rounds of 200 (medians): the in-process counterpart of the served ratio."""
    import statistics

    costs: dict[str, list[float]] = {"bare": [], **{kind: [] for kind in KINDS}}
    bare = [
        load.body(load.Load("start", 5, 200, harness.OWNER, harness.SECRET), i) for i in range(200)
    ]
    for _ in range(rounds):
        started = time.process_time()
        for body in bare:
            client.post("/bench/bare", body, content_type="application/json", **headers)
        costs["bare"].append((time.process_time() - started) / len(bare))
        for kind in KINDS:
            started = time.process_time()
            send(client, headers, kind, next(ids), 200)
            costs[kind].append((time.process_time() - started) / 200)
    median = {name: statistics.median(values) for name, values in costs.items()}
    lines = ["CPU of this process per request (medians of alternating rounds):"]
    for name, cost in median.items():
        lines.append(f"  {name:9s} {cost * 1e6:8.0f} us   bare/this {median['bare'] / cost:.3f}")
    return "\n".join(lines) + "\n"


def send(client: Any, headers: dict[str, str], kind: str, first: int, n: int) -> None:
    if kind == "callback" and _next_message[0] + n > MESSAGES:
        raise SystemExit("the fake has no message left to press a button on")
    spec = load.Load(kind, first, n, harness.OWNER, harness.SECRET, _next_message[0])
    if kind == "callback":
        _next_message[0] += n
    for i in range(n):
        response = client.post(
            "/telegram/webhook",
            load.body(spec, i),
            content_type="application/json",
            **headers,
        )
        status = response.json().get("status")
        if response.status_code != 200 or status not in (None, "ok"):
            raise SystemExit(f"{kind} {i}: {response.status_code} {response.content!r}")


@contextmanager
def counting() -> Iterator[Counter[str]]:
    """SQL statements (Django's execute wrappers, and the write-behind's own queries), Redis
    commands and Bot API calls, by name."""
    import httpx
    import redis
    from django.db import connections

    from stats import write_behind

    counts: Counter[str] = Counter()
    patches: list[tuple[Any, str, Any]] = []

    def patch(owner: Any, name: str, wrap: Callable[[Any], Any]) -> None:
        old = getattr(owner, name)
        patches.append((owner, name, old))
        setattr(owner, name, wrap(old))

    def redis_command(old: Any) -> Any:
        def wrapped(self: Any, *command: Any, **options: Any) -> Any:
            counts[f"redis {command[0]}"] += 1
            return old(self, *command, **options)

        return wrapped

    def redis_pipeline(old: Any) -> Any:
        def wrapped(self: Any, *a: Any, **k: Any) -> Any:
            counts["redis pipeline (one round trip)"] += 1
            return old(self, *a, **k)

        return wrapped

    def epoch_execute(old: Any) -> Any:  # the write-behind's queries, on its own connections
        def wrapped(conn: Any, sql: str, params: Any = ()) -> Any:
            counts["sql (write-behind epoch) " + " ".join(sql.split()[:1])] += 1
            return old(conn, sql, params)

        return wrapped

    def http_send(old: Any) -> Any:
        def wrapped(self: Any, request: Any, *a: Any, **k: Any) -> Any:
            counts["bot api " + request.url.path.rsplit("/", 1)[-1]] += 1
            return old(self, request, *a, **k)

        return wrapped

    def sql(execute: Any, query: str, params: Any, many: bool, context: Any) -> Any:
        words = [w for w in query.split()[:4] if not w.startswith('"') or "." in w]
        counts["sql " + " ".join(words)[:70]] += 1
        return execute(query, params, many, context)

    patch(redis.Redis, "execute_command", redis_command)
    patch(redis.client.Pipeline, "execute", redis_pipeline)
    patch(write_behind, "_execute", epoch_execute)
    # Every Bot API call reaches the client's transport, httpx's own.
    patch(httpx.HTTPTransport, "handle_request", http_send)
    try:
        with connections["default"].execute_wrapper(sql):
            yield counts
    finally:
        for owner, name, old in reversed(patches):
            setattr(owner, name, old)


def _revision() -> str:
    return harness.git_revision() or "unknown"


if __name__ == "__main__":
    main()
