"""A broadcast's pace against Telegram's limits, and answers sent during it (issue 43).

The product's broadcast sender (``broadcasts.sending``, the real outgoing limiter at its
defaults: 30 messages a second, 80 percent of them for bulk sends) against the fake Bot API
enforcing Telegram's limits (``tests/fakes/telegram_limits.py``: 429 past 30 a second or 1 a
second per private chat). It prints, measured in one run:

- the broadcast's time against the least its share of Telegram's limits allows
  (recipients / 24 a second), as a ratio (1.00 is the limit; the goal is within 1.05), and
  how many sends the fake refused (0: the limiter kept under the limits, no 429 needed);
- answers (interactive sends to other private chats, at ``--answers`` a second: within the
  share the broadcast leaves) during the broadcast against the same answers alone, just
  before it: p50 and p99 of the whole send (limiter and Bot API call), and their ratio;
- answers to incoming updates during the broadcast: ``--updates`` a second (100) group
  messages from 1,000 members in 10 supergroups (the bulk of a community bot's traffic,
  counted and checked, answered with no message: 100 replies a second could not fit in
  Telegram's 30) posted to ``/telegram/webhook`` through Django's test client by
  ``--web-processes`` (2) processes of their own, as web workers beside the worker that
  broadcasts (same database and Redis); p50 and p99 of the time from each update's due time
  (open loop: a late start counts) to the webhook's answer (the goal: p99 under 20 ms), and
  how many were not answered 200. Needs PostgreSQL (DATABASE_URL).

    DJANGO_SETTINGS_MODULE=config.settings_test .venv/bin/python bench/broadcast.py \
        [--recipients 10000] [--answers 5] [--updates 100] [--quick]

``--quick`` (300 recipients, a 3-second baseline) only shows that it runs; the full run is
10,000 recipients against the fake's limits at Telegram's (30 a second, 1 a second per
private chat, 20 a minute per group).

Run with REDIS_URL (and DATABASE_URL) to measure the limiter on Redis as production runs it;
without, its in-process store. A throwaway test database is created and dropped. Nothing is
asserted.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings_test")
os.environ["OUTGOING_LIMITS"] = "true"


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def answers(
    rate: float, seconds: float, first_chat: int, stop: threading.Event, refused: list[str]
) -> list[float]:
    """Send answers to distinct private chats at ``rate`` a second; each one's seconds. An
    answer Telegram refuses (a 429) is put in ``refused`` and the next one goes on."""
    from django.db import connection

    from telegram_bot.bot import get_client
    from telegram_bot.errors import TelegramApiError

    client = get_client()
    took: list[float] = []
    start = time.monotonic()
    n = 0
    while not stop.is_set() and time.monotonic() - start < seconds:
        due = start + n / rate
        wait = due - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        began = time.perf_counter()
        try:
            client.send_message(chat_id=first_chat + n, text="an answer")
        except TelegramApiError as exc:
            refused.append(str(exc))
        else:
            took.append(time.perf_counter() - began)
        n += 1
    connection.close()
    return took


def web_process(
    database_url: str,
    api_url: str,
    rate: float,
    part: int,
    go: Any,
    stop: Any,
    results: Any,
) -> None:
    """One web process: post group messages to the webhook at ``rate`` a second from ``go``
    until ``stop``; puts each one's seconds from its due time to the answer, and how many
    were not 200. ``part`` keeps update ids and senders apart from the other processes'."""
    os.environ["DATABASE_URL"] = database_url
    import django

    django.setup()
    from django.conf import settings
    from django.test.utils import setup_test_environment

    setup_test_environment()  # the test client's host is allowed
    settings.TELEGRAM_API_BASE_URL = api_url
    settings.OWNER_TELEGRAM_ID = 1000
    go.wait()
    results.put(incoming(rate, stop, part))


def incoming(rate: float, stop: Any, part: int) -> tuple[list[float], int]:
    import json

    from django.conf import settings
    from django.db import connection
    from django.test import Client

    from tests.builders import make_message_update

    client = Client()
    secret = settings.TELEGRAM_WEBHOOK_SECRET
    took: list[float] = []
    failed = 0
    start = time.perf_counter()
    n = 0
    while not stop.is_set():
        due = start + n / rate
        wait = due - time.perf_counter()
        if wait > 0:
            time.sleep(wait)
        update = make_message_update(
            f"message {n}",
            update_id=900_000_000 + part * 10_000_000 + n,
            chat_id=-1001000000000 - n % 10,
            user_id=70_000_000 + part * 1000 + n % 1000,
        )
        response = client.post(
            "/telegram/webhook",
            data=json.dumps(update),
            content_type="application/json",
            HTTP_X_TELEGRAM_BOT_API_SECRET_TOKEN=secret,
        )
        took.append(time.perf_counter() - due)
        failed += response.status_code != 200
        n += 1
    connection.close()
    return took, failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipients", type=int, default=10_000)
    parser.add_argument("--answers", type=float, default=5.0, help="answers a second")
    parser.add_argument("--baseline-seconds", type=float, default=10.0)
    parser.add_argument("--updates", type=float, default=100.0, help="incoming updates a second")
    parser.add_argument("--web-processes", type=int, default=2, help="processes posting them")
    parser.add_argument("--quick", action="store_true", help="300 recipients: a smoke run")
    args = parser.parse_args()
    if min(args.recipients, args.answers, args.updates, args.web_processes) <= 0:
        parser.error("--recipients, --answers, --updates and --web-processes must be positive")
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        parser.error("set DATABASE_URL to a PostgreSQL database: the web processes share it")
    if args.quick:
        args.recipients, args.baseline_seconds = min(args.recipients, 300), 3.0

    import django
    from django.conf import settings
    from django.test.utils import get_runner, setup_test_environment

    django.setup()
    setup_test_environment()
    runner = get_runner(settings)(verbosity=0, interactive=False)
    old = runner.setup_databases()
    from tests.fakes.telegram import FakeTelegramServer
    from tests.fakes.telegram_limits import TelegramLimits

    server = FakeTelegramServer().start()
    try:
        settings.TELEGRAM_API_BASE_URL = server.base_url
        settings.OWNER_TELEGRAM_ID = 1000
        run(args, server, TelegramLimits().install(server))
    finally:
        server.stop()
        runner.teardown_databases(old)


def run(args: argparse.Namespace, server: object, limits: object) -> None:
    from django.conf import settings
    from django.db import connection

    from broadcasts import services
    from broadcasts.models import Broadcast, BroadcastStatus, Subscriber
    from broadcasts.selectors import progress
    from broadcasts.sending import broadcast_run
    from telegram_bot.bot import outgoing_limits

    share = outgoing_limits()
    assert share is not None
    bulk_rate = share.bulk_per_second
    Subscriber.objects.bulk_create(
        [Subscriber(user_id=10_000_000 + n) for n in range(args.recipients)], batch_size=2000
    )
    broadcast = Broadcast.objects.create(text="Bench news", preview_chat_id=1000)
    services.broadcast_preview(broadcast_id=broadcast.pk)
    services.broadcast_start(broadcast_id=broadcast.pk)

    # The web processes start now (Django set up) and post from "go" on.
    spawn = multiprocessing.get_context("spawn")
    go, web_stop, results = spawn.Event(), spawn.Event(), spawn.Queue()
    test_database = connection.settings_dict["NAME"]
    database_url = urlunsplit(
        urlsplit(os.environ["DATABASE_URL"])._replace(path=f"/{test_database}")
    )
    rate = args.updates / args.web_processes
    web = [
        spawn.Process(
            target=web_process,
            args=(database_url, server.base_url, rate, part, go, web_stop, results),  # type: ignore[attr-defined]
        )
        for part in range(args.web_processes)
    ]
    for process in web:
        process.start()

    stop = threading.Event()
    refused_alone: list[str] = []
    refused_during: list[str] = []
    alone = answers(args.answers, args.baseline_seconds, 50_000_000, stop, refused_alone)
    time.sleep(1.1)  # the answers' window empties

    during: list[float] = []
    sender = threading.Thread(
        target=lambda: during.extend(answers(args.answers, 10**9, 60_000_000, stop, refused_during))
    )
    started = time.monotonic()
    go.set()
    sender.start()
    status = BroadcastStatus.SENDING
    while status not in (BroadcastStatus.DONE, BroadcastStatus.CANCELLED):
        status = broadcast_run(broadcast_id=broadcast.pk)
    elapsed = time.monotonic() - started
    stop.set()
    web_stop.set()
    sender.join()
    replies: list[float] = []
    unanswered = 0
    for _ in web:
        took, failed = results.get(timeout=60)
        replies += took
        unanswered += failed
    for process in web:
        process.join(timeout=30)

    p = progress(broadcast.pk)
    least = args.recipients / bulk_rate
    print(
        f"limits: {settings.OUTGOING_PER_SECOND}/s overall, {bulk_rate}/s for broadcasts "
        f"({settings.OUTGOING_BULK_SHARE_PERCENT}%), KV store "
        f"{'Redis' if os.environ.get('REDIS_URL') else 'in-process'}"
    )
    print(
        f"broadcast: {p.sent} of {p.total} sent in {elapsed:.1f} s; the limits allow "
        f"{least:.1f} s at best: x{elapsed / least:.3f}; the fake refused "
        f"{limits.refused} (429), fullest second {limits.max_in_window}"  # type: ignore[attr-defined]
    )
    for name, values, refused in (
        ("answers alone", alone, refused_alone),
        ("answers during", during, refused_during),
    ):
        print(
            f"{name:15} {len(values):5} sent, p50 {percentile(values, 0.5) * 1000:7.2f} ms, "
            f"p99 {percentile(values, 0.99) * 1000:7.2f} ms, "
            f"mean {statistics.fmean(values) * 1000:7.2f} ms; {len(refused)} refused"
            + (f" ({refused[0]})" if refused else "")
        )
    print(
        f"p99 during / alone: x{percentile(during, 0.99) / percentile(alone, 0.99):.2f} (same run)"
    )
    p99 = percentile(replies, 0.99) * 1000
    print(
        f"updates during  {len(replies):5} posted at {args.updates:g}/s by "
        f"{args.web_processes} web processes "
        f"({len(replies) / elapsed:.1f}/s achieved), {unanswered} not answered 200, "
        f"p50 {percentile(replies, 0.5) * 1000:7.2f} ms, p99 {p99:7.2f} ms"
    )
    if len(replies) / elapsed < 0.95 * args.updates:
        print(
            "the web processes did not keep up with the rate: the machine is short of CPU "
            "(see the load average), and the p99 counts the backlog"
        )
    ratio = elapsed / least
    print(
        f"targets: broadcast within 5% of the limits: x{ratio:.3f} "
        f"{'met' if ratio <= 1.05 else 'NOT met'}; answers to updates p99 under 20 ms: "
        f"{p99:.2f} ms {'met' if p99 < 20 else 'NOT met'}"
        + (" (--quick: a smoke run, not the measurement)" if args.quick else "")
    )


if __name__ == "__main__":
    main()
