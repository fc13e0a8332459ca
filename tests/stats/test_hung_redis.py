"""A hung Redis (SIGSTOP) under the web server (issue 39, item 1), with real processes: the web
server as the image starts it (``python -m config.web``) on the test database and a private
redis-server of the test's own, which the test freezes and continues.

A group message arrives while Redis is frozen: its KV commit (the counters with the update's
done-marker, one script) is sent, no answer comes, and the update is answered 503. The commit
waits in Redis's socket: when Redis resumes it runs, and Telegram's re-delivery is answered
"duplicate". Before the fix the database never got the message (the KV store said 41, the
table 40, until the first backfill after midnight). And when the commit never runs (Redis
killed while hung, restarted from its append-only file), the re-delivery counts it, and the
table must not count it a second time. After settling (the reconciliation, which the worker
runs every minute), the KV store and the table agree: 41, never 42.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.db import connection, transaction
from django.db.models import Sum

from stats import keys
from stats.daylock import lock_days
from stats.models import DailyUserStat
from stats.reconcile import reconcile_run
from telegram_bot.state import KVStore, open_store
from tests.ports import free_port
from tests.redis_server import RedisServer, wait_redis_ready
from tests.webhook_process import post, webhook_server

WARM_UP = 40

pytestmark = [
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="the web server runs on the test database"
    ),
    pytest.mark.skipif(not shutil.which("redis-server"), reason="redis-server not installed"),
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(240),
]


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(free_port(), tmp_path, persistent=True)
    server.start()
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture
def store(redis_server: RedisServer) -> Iterator[KVStore]:
    store = open_store(redis_server.url)
    wait_redis_ready(store)
    yield store
    store.close()


@pytest.fixture
def web(tmp_path: Path, redis_server: RedisServer, store: KVStore) -> Iterator[int]:
    """The web server on the private Redis; yields its port. The process's liveness key stays
    fresh across the test: the frozen message's first Redis command is its commit."""
    with webhook_server(tmp_path, redis_server.url, UPDATE_LIVENESS_TTL_SECONDS="120") as port:
        yield port


def message(chat_id: int, n: int) -> dict[str, object]:
    return {
        "update_id": abs(chat_id) % 1_000_000 * 1000 + n,
        "message": {
            "message_id": n,
            "date": int(time.time()),
            "chat": {"id": chat_id, "type": "supergroup", "title": "G"},
            "from": {"id": 9_000 + n, "is_bot": False, "first_name": f"M{n}"},
            "text": "three words here",
        },
    }


def warm_up(port: int, chat_id: int) -> None:
    for n in range(1, WARM_UP + 1):
        assert post(port, message(chat_id, n)) == (200, "processed")


def table_total(chat_id: int) -> int:
    """The chat's messages in the table, read under the day's exclusive lock: every add whose
    KV commit came back is in (the write-behind's epoch holds the lock until it commits)."""
    with transaction.atomic():
        lock_days([(chat_id, datetime.now(UTC).date())], shared=False)
        rows = DailyUserStat.objects.filter(chat_id=chat_id)
        return int(rows.aggregate(total=Sum("message_count"))["total"] or 0)


def kv_total(store: KVStore, chat_id: int) -> int:
    return int(store.get(keys.activity_key(chat_id, datetime.now(UTC).date())) or 0)


def settled(store: KVStore, chat_id: int, seconds: float = 20) -> tuple[int, int]:
    """(KV total, table total) once they agree, running the reconciliation as the worker does
    (every minute there); what they are at the deadline otherwise."""
    deadline = time.monotonic() + seconds
    while True:
        reconcile_run(store=store)
        figures = kv_total(store, chat_id), table_total(chat_id)
        if figures[0] == figures[1] or time.monotonic() > deadline:
            return figures
        time.sleep(0.2)


def test_a_message_sent_while_redis_hung_is_counted_once_in_the_table(
    redis_server: RedisServer, store: KVStore, web: int
) -> None:
    # The commit runs when Redis resumes: the re-delivery is a duplicate.
    chat = -100_390_001
    warm_up(web, chat)
    frozen = message(chat, WARM_UP + 1)
    redis_server.freeze()
    try:
        status, _ = post(web, frozen)
    finally:
        redis_server.thaw()
    assert status == 503
    assert post(web, frozen) == (200, "duplicate"), "the commit did not run when Redis resumed"
    assert settled(store, chat) == (WARM_UP + 1, WARM_UP + 1)

    # The commit never runs (Redis killed while hung, restarted from its append-only file):
    # the re-delivery counts the message, and the table counts it once.
    chat = -100_390_002
    warm_up(web, chat)
    lost = message(chat, WARM_UP + 1)
    redis_server.freeze()
    try:
        status, _ = post(web, lost)
    finally:
        redis_server.restart()
    assert status == 503
    wait_redis_ready(store)
    assert kv_total(store, chat) == WARM_UP, "the append-only file lost the warm-up"
    deadline = time.monotonic() + 20
    while (answer := post(web, lost)) != (200, "processed"):
        assert time.monotonic() < deadline, f"the re-delivery was answered {answer}"
        time.sleep(0.2)
    assert settled(store, chat) == (WARM_UP + 1, WARM_UP + 1)
