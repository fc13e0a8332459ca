"""Real worker processes (``manage.py run_jobs``) sending one broadcast on the test database
(PostgreSQL with Redis in CI), killed with SIGKILL twice in the middle: every recipient gets
the message once (the fake Bot API counts), the progress adds up, and the processes together
keep under the fake's rate limit through the shared limiter.

The first kill lands wherever the worker is; the second lands while a send is in flight
(Telegram took the message, its answer is held back): that recipient's outcome is unknown and
it is never sent again. A kill can only ever leave that one send per worker unknown.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from typing import Any

import pytest

from broadcasts.models import BroadcastRecipient, BroadcastStatus, RecipientStatus
from broadcasts.selectors import progress
from tests.broadcasts.conftest import deliveries, make_broadcast, start_now, subscribe
from tests.content.test_processes import start_worker, wait_for, worker_env
from tests.fakes.telegram import FakeTelegramServer
from tests.fakes.telegram_limits import TelegramLimits

RECIPIENTS = int(os.environ.get("BROADCAST_KILL_RECIPIENTS", "600"))
TEXT = "Exactly once"
PACE = 40  # a second, for all the workers together (Telegram's is 30)
SECONDS = RECIPIENTS / PACE * 1.5 + 60  # the sending at PACE, with room for a slow machine
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(int(SECONDS) + 120),
]
SHARED_LIMITER = bool(os.environ.get("REDIS_URL"))


def kill(worker: subprocess.Popen[str]) -> None:
    if worker.poll() is None:
        worker.send_signal(signal.SIGKILL)
    worker.wait(timeout=10)


def wait_for_slowly(condition: Any, timeout: float) -> None:
    """``wait_for`` polling the database every 0.2 s, not every 10 ms."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.2)


def sent_so_far(limits: TelegramLimits) -> int:
    """Sends the fake accepted (cheap to poll: the fake serves from this process)."""
    return len(limits.accepted)


def test_a_broadcast_survives_two_kills_and_reaches_everyone_once(
    bot: FakeTelegramServer, settings: Any
) -> None:
    recipients = list(range(100_001, 100_001 + RECIPIENTS))
    subscribe(*recipients)
    broadcast = start_now(make_broadcast(TEXT))
    owner_copies = deliveries(bot, TEXT).pop(1000)
    limits = TelegramLimits(per_second=PACE + 5, private_per_second=1).install(bot)
    env = {
        **worker_env(bot, settings),
        "OUTGOING_LIMITS": "true",
        "OUTGOING_PER_SECOND": str(PACE),
        "OUTGOING_BULK_SHARE_PERCENT": "100",
    }
    workers: list[subprocess.Popen[str]] = []
    try:
        # Kill 1: wherever the worker happens to be.
        workers.append(start_worker(env, "--lease-seconds", "3", "--seconds", str(int(SECONDS))))
        wait_for(lambda: sent_so_far(limits) >= RECIPIENTS // 4, timeout=SECONDS)
        kill(workers[-1])
        # Kill 2: inside a send (Telegram has the message, the answer is held 10 s).
        bot.delay_next("sendMessage", 10)
        workers.append(start_worker(env, "--lease-seconds", "3", "--seconds", str(int(SECONDS))))
        before = sent_so_far(limits)
        wait_for(lambda: sent_so_far(limits) > before, timeout=60)
        kill(workers[-1])
        # Two workers at once finish it.
        workers += [
            start_worker(env, "--lease-seconds", "3", "--seconds", str(int(SECONDS)))
            for _ in range(2)
        ]
        wait_for(
            lambda: (
                progress(broadcast.pk).left == 0
                and type(broadcast).objects.get(pk=broadcast.pk).status == BroadcastStatus.DONE
            ),
            timeout=SECONDS,
        )
    finally:
        for worker in workers:
            kill(worker)

    counts = deliveries(bot, TEXT)
    counts[1000] -= owner_copies
    assert max(counts.values()) == 1  # nothing twice
    rows = dict(
        BroadcastRecipient.objects.filter(broadcast=broadcast).values_list("user_id", "status")
    )
    assert sorted(rows) == recipients  # nothing skipped: every recipient has a row
    unknown = [uid for uid, status in rows.items() if status == RecipientStatus.UNKNOWN]
    sent = [uid for uid, status in rows.items() if status == RecipientStatus.SENT]
    assert len(sent) + len(unknown) == RECIPIENTS  # every row has its outcome
    assert all(counts.get(uid) == 1 for uid in sent)
    # Only a send in flight at a kill can be unknown: the second kill's at least (held by the
    # fake, so it arrived), at most one per kill.
    assert 1 <= len(unknown) <= 2
    assert any(counts.get(uid) == 1 for uid in unknown)
    arrived = sum(1 for uid in recipients if counts.get(uid) == 1)
    assert arrived >= RECIPIENTS - 1  # at most the first kill's send may not have left
    p = progress(broadcast.pk)
    assert (p.total, p.sent, p.unknown, p.left) == (RECIPIENTS, len(sent), len(unknown), 0)
    if SHARED_LIMITER:
        # Four processes, one limiter in Redis: the fake's limit was never crossed.
        assert limits.refused == 0, limits.refused
        assert limits.max_in_window <= PACE + 5
    print(
        f"\n{RECIPIENTS} recipients, {len(unknown)} unknown after 2 kills, "
        f"{arrived} arrived; fullest second {limits.max_in_window}, "
        f"{limits.refused} refused by the fake's limits"
    )
