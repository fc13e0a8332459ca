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
  before it: p50 and p99 of the whole send (limiter and Bot API call), and their ratio.

    DJANGO_SETTINGS_MODULE=config.settings_test .venv/bin/python bench/broadcast.py \
        [--recipients 10000] [--answers 5]

Run with REDIS_URL (and DATABASE_URL) to measure the limiter on Redis as production runs it;
without, its in-process store. A throwaway test database is created and dropped. Nothing is
asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings_test")
os.environ["OUTGOING_LIMITS"] = "true"


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def answers(rate: float, seconds: float, first_chat: int, stop: threading.Event) -> list[float]:
    """Send answers to distinct private chats at ``rate`` a second; each one's seconds."""
    from django.db import connection

    from telegram_bot.bot import get_client

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
        client.send_message(chat_id=first_chat + n, text="an answer")
        took.append(time.perf_counter() - began)
        n += 1
    connection.close()
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipients", type=int, default=10_000)
    parser.add_argument("--answers", type=float, default=5.0, help="answers a second")
    parser.add_argument("--baseline-seconds", type=float, default=10.0)
    args = parser.parse_args()

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

    stop = threading.Event()
    alone = answers(args.answers, args.baseline_seconds, 50_000_000, stop)
    time.sleep(1.1)  # the answers' window empties

    during: list[float] = []
    sender = threading.Thread(
        target=lambda: during.extend(answers(args.answers, 10**9, 60_000_000, stop))
    )
    started = time.monotonic()
    sender.start()
    status = BroadcastStatus.SENDING
    while status not in (BroadcastStatus.DONE, BroadcastStatus.CANCELLED):
        status = broadcast_run(broadcast_id=broadcast.pk)
    elapsed = time.monotonic() - started
    stop.set()
    sender.join()

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
    for name, values in (("answers alone", alone), ("answers during", during)):
        print(
            f"{name:15} {len(values):5} sent, p50 {percentile(values, 0.5) * 1000:7.2f} ms, "
            f"p99 {percentile(values, 0.99) * 1000:7.2f} ms, "
            f"mean {statistics.fmean(values) * 1000:7.2f} ms"
        )
    print(
        f"p99 during / alone: x{percentile(during, 0.99) / percentile(alone, 0.99):.2f} (same run)"
    )


if __name__ == "__main__":
    main()
