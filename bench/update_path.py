"""The group-message update path against a bare django-ninja endpoint, in one run.

Unique group messages go through the web worker's WSGI application (Django's handler, as
``config.wsgi`` builds it, called as a server calls it: the site's middleware, URL resolution,
the view) into the webhook and the whole pipeline with statistics counting; the baseline is a
bare django-ninja POST endpoint that reads nothing and answers ``{"ok": true}`` through the
same application and middleware. Rates are per second of this process's CPU time, and
rounds alternate between the two, so that a busy machine slows both alike; the figure that
matters is the ratio (product / bare), never the absolute rate. (Served throughput under load,
with the servers' own CPU, is the work of a load generator against gunicorn, not of this
script.)
Also printed: the cost of turning a body into an Update alone, against ``json.loads`` of it.

``--profile DIR`` then sends more messages once with the round trips counted (KV commands on
Redis, SQL statements through Django's execute wrappers and the write-behind's queries, and
transactions) and once under cProfile (CPU time), and writes both
to ``DIR/update_path-<git revision>-<kv>.txt``: what to attack next, per message.

    python bench/update_path.py [--messages 400] [--rounds 5] [--kv memory|db|redis]
                                [--profile bench/profiles]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings_test")
SECRET_HEADER = "HTTP_X_TELEGRAM_BOT_API_SECRET_TOKEN"  # noqa: S105 - a header name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--kv", choices=("memory", "db", "redis"), default="memory")
    parser.add_argument("--profile", type=Path, help="write a profile of the path here")
    args = parser.parse_args()

    import django

    django.setup()
    from django.db import connection
    from django.test.utils import override_settings, setup_test_environment

    from bench.stats_throughput import cleanup_kv, open_kv

    setup_test_environment()
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    store = open_kv(args.kv)
    try:
        with override_settings(ROOT_URLCONF="bench.urls", ALLOWED_HOSTS=["*"]):
            run(args, store)
    finally:
        from stats import write_behind

        write_behind.shutdown()  # its connection would keep the test database in use
        cleanup_kv(store)
        connection.creation.destroy_test_db(old_name, verbosity=0)


def run(args: argparse.Namespace, store: Any) -> None:
    from django.conf import settings
    from django.db import connection

    from telegram_bot.state import override_store

    client = WsgiClient()
    headers = {SECRET_HEADER: settings.TELEGRAM_WEBHOOK_SECRET}
    bare_rates, product_rates, unmoderated_rates = [], [], []
    quiet_moderation()
    with override_store(store):
        for round_no in range(args.rounds):
            bodies = [json.dumps(u) for u in make_updates(args.messages, round_no)]
            bare_rates.append(rate(client, "/bench/bare", bodies, headers))
            product_rates.append(rate(client, "/telegram/webhook", bodies, headers))
            bodies = [json.dumps(u) for u in make_updates(args.messages, 50 + round_no)]
            with without_moderation():
                unmoderated_rates.append(rate(client, "/telegram/webhook", bodies, headers))
    bare, product = statistics.median(bare_rates), statistics.median(product_rates)
    unmoderated = statistics.median(unmoderated_rates)
    parse_us, loads_us = parse_cost()
    print(f"update path: {connection.vendor}, KV {args.kv}, {args.rounds} rounds x "
          f"{args.messages} unique group messages (medians)")  # fmt: skip
    print(f"  bare django-ninja endpoint (baseline)  {bare:8.0f} requests/CPU-s")
    print(f"  webhook, group message counted         {product:8.0f} updates/CPU-s"
          f"   ratio {product / bare:.3f} of baseline")  # fmt: skip
    print(f"  the same without moderation observers  {unmoderated:8.0f} updates/CPU-s"
          f"   moderation on/off ratio {product / unmoderated:.3f}")  # fmt: skip
    print(f"  parse one body into an Update          {parse_us:8.1f} us"
          f"   ratio {parse_us / loads_us:.2f} of json.loads ({loads_us:.1f} us)")  # fmt: skip
    if args.profile is not None:
        with override_store(store):
            summary = profile(args, store, client, headers)
        args.profile.mkdir(parents=True, exist_ok=True)
        target = args.profile / f"update_path-{_revision()}-{args.kv}.txt"
        ratio = f"ratio {product / bare:.3f} of the bare endpoint ({product:.0f} / {bare:.0f})"
        target.write_text(f"{connection.vendor}, KV {args.kv}: {ratio}\n{summary}")
        print(f"  profile written to {target}")


def profile(args: argparse.Namespace, store: Any, client: Any, headers: dict[str, str]) -> str:
    """Round trips per message (counted), then where the CPU time goes (cProfile)."""
    import cProfile
    import io
    import pstats
    from collections import Counter

    from django.db import connection

    commands: Counter[str] = Counter()
    counted = {"commits": 0}
    redis_client = getattr(store, "client", None)
    if redis_client is not None:  # every command but a pipeline's (the path has none)
        send = redis_client.execute_command

        def count_command(*command: Any, **options: Any) -> Any:
            commands[f"redis {command[0]}"] += 1
            return send(*command, **options)

        redis_client.execute_command = count_command
    commit = connection.commit

    def count_commit() -> None:
        counted["commits"] += 1
        commit()

    def count_sql(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        words = [word for word in sql.split()[:3] if not word.startswith('"')]  # no savepoint ids
        commands["sql " + " ".join(words)] += 1
        if sql == "COMMIT":  # the live writer ends its own transaction on PostgreSQL
            counted["commits"] += 1
        return execute(sql, params, many, context)

    # The write-behind's epochs run on psycopg connections of their own, not Django's: their
    # queries are counted at the one function that sends them.
    from stats import write_behind

    epoch_execute = write_behind._execute

    def count_epoch(conn: Any, sql: str, params: Any = ()) -> Any:
        commands["sql (write-behind epoch) " + " ".join(sql.split()[:1])] += 1
        if sql.endswith("COMMIT"):
            counted["commits"] += 1
        return epoch_execute(conn, sql, params)

    n = args.messages
    bodies = [json.dumps(u) for u in make_updates(n, 90)]
    connection.commit = count_commit
    write_behind._execute = count_epoch
    try:
        with connection.execute_wrapper(count_sql):
            rate(client, "/telegram/webhook", bodies, headers)
            write_behind.flush()  # the last epoch's statements, in the count
    finally:
        del connection.commit
        write_behind._execute = epoch_execute
        if redis_client is not None:
            del redis_client.execute_command
    lines = [
        f"statements and KV commands per message ({n} unique group messages; SQL through "
        "Django's execute wrappers, which do not see its health check's SELECT 1):"
    ]
    lines += [f"  {count / n:5.2f}  {name}" for name, count in sorted(commands.items())]
    lines.append(f"  {counted['commits'] / n:5.2f}  database transactions committed")
    profiler = cProfile.Profile(time.process_time)
    bodies = [json.dumps(u) for u in make_updates(n, 91)]
    profiler.enable()
    rate(client, "/telegram/webhook", bodies, headers)
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out).strip_dirs()
    stats.sort_stats("cumulative").print_stats(45)
    stats.sort_stats("tottime").print_stats(25)
    return (
        "\n".join(lines) + "\n\ncProfile, CPU time (inflates many small calls):\n" + out.getvalue()
    )


def _revision() -> str:
    from bench import harness

    return harness.git_revision() or "unknown"


def quiet_moderation() -> None:
    """Anti-flood at its highest limit in the bench chats: the path is measured as it is for
    a chat where nobody floods (no Telegram call is made; the bench has no Bot API)."""
    try:
        from moderation.models import ChatSettings
    except ImportError:
        return
    for chat_id in range(-1005, -1000):
        ChatSettings.objects.update_or_create(
            chat_id=chat_id, defaults={"flood_messages": 100, "flood_seconds": 2}
        )


class without_moderation:
    """The router with the moderation observers left out, for the same-run comparison."""

    def __enter__(self) -> None:
        from telegram_bot.pipeline import router

        self.saved = router.get_router()
        kept = [o for o in self.saved.observers if not o.name.startswith("mod.")]
        router._router = router.Router(self.saved.routes, self.saved.panel_entries, kept)

    def __exit__(self, *exc: object) -> None:
        from telegram_bot.pipeline import router

        router._router = self.saved


class WsgiClient:
    """POSTs to the web worker's application as gunicorn does (an environ, ``start_response``,
    the answer's ``close``), with the database connection kept between requests as the test
    client keeps it (the served worker keeps it too: persistent connections)."""

    def __init__(self) -> None:
        from django.core.wsgi import get_wsgi_application

        self.application = get_wsgi_application()

    def post(self, url: str, data: str, content_type: str, **headers: str) -> Any:
        from types import SimpleNamespace

        from django.core.signals import request_finished, request_started
        from django.db import close_old_connections
        from django.test.client import FakePayload, RequestFactory

        body = data.encode()
        environ = RequestFactory()._base_environ(
            PATH_INFO=url,
            REQUEST_METHOD="POST",
            CONTENT_TYPE=content_type,
            CONTENT_LENGTH=str(len(body)),
            **{"wsgi.input": FakePayload(body)},
            **headers,
        )
        answer: dict[str, Any] = {}

        def start_response(status: str, response_headers: Any) -> None:
            answer["status"] = int(status.split()[0])

        request_started.disconnect(close_old_connections)
        request_finished.disconnect(close_old_connections)
        try:
            chunks = self.application(environ, start_response)
            content = b"".join(chunks)
            chunks.close()
        finally:
            request_started.connect(close_old_connections)
            request_finished.connect(close_old_connections)
        return SimpleNamespace(status_code=answer["status"], content=content)


def rate(client: Any, url: str, bodies: list[str], headers: dict[str, str]) -> float:
    """Requests per second of this process's CPU time (what other processes on a busy
    machine do is not counted; the KV and database servers' own work is not either)."""
    started = time.process_time()
    for body in bodies:
        response = client.post(url, data=body, content_type="application/json", **headers)
        if response.status_code != 200:
            raise SystemExit(f"{url} answered {response.status_code}: {response.content!r}")
    return len(bodies) / (time.process_time() - started)


def parse_cost(repeat: int = 20_000) -> tuple[float, float]:
    """Microseconds to parse a group message body into an Update, and to json.loads it."""
    from telegram_bot import updates

    body = json.dumps(make_updates(1, 99)[0]).encode()
    parse_json = getattr(updates, "parse_update_json", None)
    if parse_json is None:  # before updates were typed: json.loads + the shape check

        def parse_json(raw: bytes) -> Any:
            return updates.parse_update(json.loads(raw))

    started = time.process_time()
    for _ in range(repeat):
        parse_json(body)
    parse_us = (time.process_time() - started) / repeat * 1e6
    started = time.process_time()
    for _ in range(repeat):
        json.loads(body)
    return parse_us, (time.process_time() - started) / repeat * 1e6


def make_updates(count: int, batch: int) -> list[dict[str, Any]]:
    now = int(time.time())
    words = ["hello", "world", "coffee", "weather", "small", "talk", "about", "the", "day"]
    updates = []
    for n in range(count):
        chat_id, user_id = -1001 - n % 5, 1 + n % 60
        text = " ".join(words[(n + k) % len(words)] for k in range(1 + n % 9))
        message = {
            "message_id": batch * 1_000_000 + n + 1,
            "date": now - n % 3600,
            "chat": {"id": chat_id, "type": "supergroup", "title": f"Group {chat_id}"},
            "from": {"id": user_id, "is_bot": False, "first_name": f"User{user_id}"},
            "text": text,
        }
        updates.append({"update_id": 50_000_000 + batch * 1_000_000 + n, "message": message})
    return updates


if __name__ == "__main__":
    main()
