"""A claim whose release failed does not hold its update after Redis is back (issue 39, item 2),
with real processes: the web server as the image starts it (``python -m config.web``) on the
test database and a private redis-server of the test's own, frozen with SIGSTOP.

A command arrives while Redis is frozen: its claim is sent and no answer comes (503); the
release that follows cannot even connect (its handshake is not answered either), so it is
never sent. When Redis resumes, it runs the claim that waited in its socket: a claim of a live
process, which every re-delivery met as "in progress" (503) until ``UPDATE_CLAIM_TTL_SECONDS``
(90 s) ran out. The heartbeat now gives it up once Redis answers: the re-delivery is processed
within seconds.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection

from telegram_bot.state import KVStore, open_store
from tests.builders import make_message_update
from tests.fakes.telegram import FakeTelegramServer
from tests.ports import free_port
from tests.redis_server import RedisServer, wait_redis_ready
from tests.webhook_process import post, webhook_server

pytestmark = [
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="the web server runs on the test database"
    ),
    pytest.mark.skipif(not shutil.which("redis-server"), reason="redis-server not installed"),
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(180),
]
TOKEN = "123456789:TEST-token-for-the-fake-bot-api-000000"
BOT_ID = int(TOKEN.partition(":")[0])
BACK_WITHIN_SECONDS = 10.0  # "a few seconds"; the claim's TTL is 90


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(free_port(), tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture
def store(redis_server: RedisServer) -> Iterator[KVStore]:
    # As the web server opens it: keys scoped by the bot's id (STATE_KEYS_BY_BOT, the token's).
    opened = open_store(redis_server.url, bot=BOT_ID)
    wait_redis_ready(opened)
    yield opened
    opened.close()


def test_a_claim_whose_release_failed_is_given_up_once_redis_answers(
    tmp_path: Path, redis_server: RedisServer, store: KVStore, fake_telegram: FakeTelegramServer
) -> None:
    settings = {
        "TELEGRAM_API_BASE_URL": fake_telegram.base_url,
        "TELEGRAM_BOT_TOKEN": TOKEN,
        # The process stays alive in the store's eyes across the freeze: its claim is never
        # taken over, only released.
        "UPDATE_LIVENESS_TTL_SECONDS": "120",
    }
    with webhook_server(tmp_path, redis_server.url, **settings) as port:
        assert post(port, make_message_update("/help", chat_id=4242, user_id=4242)) == (
            200,
            "processed",
        )
        update = make_message_update("/help", chat_id=4243, user_id=4243)
        redis_server.freeze()
        try:
            status, _ = post(port, update)
        finally:
            redis_server.thaw()
        assert status == 503
        thawed = time.monotonic()
        tries = 1
        while (answer := post(port, update)) != (200, "processed"):
            waited = time.monotonic() - thawed
            assert waited < BACK_WITHIN_SECONDS, f"{answer} after {waited:.0f} s, {tries} tries"
            tries += 1
            time.sleep(0.2)
    assert store.get(f"upd:{update['update_id']}") == {"s": "done"}
