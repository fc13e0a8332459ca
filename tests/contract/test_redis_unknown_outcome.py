"""A hung Redis (SIGSTOP on a private redis-server): a write whose answer does not come in
time is an unknown outcome (``StateOutcomeUnknownError``: it runs when the server resumes);
one that could not be sent (no server) is a plain ``StateUnavailableError``."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from telegram_bot.errors import StateOutcomeUnknownError, StateUnavailableError
from telegram_bot.state import KVStore, open_store
from tests.ports import free_port
from tests.redis_server import RedisServer, wait_redis_ready

pytestmark = [
    pytest.mark.skipif(not shutil.which("redis-server"), reason="redis-server not installed"),
    pytest.mark.timeout(60),
]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(free_port(), tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture
def store(server: RedisServer) -> Iterator[KVStore]:
    opened = open_store(server.url)
    wait_redis_ready(opened)
    yield opened
    opened.close()


def test_an_unanswered_write_is_an_unknown_outcome_and_runs_on_resume(
    server: RedisServer, store: KVStore
) -> None:
    store.increment("counter:hung")  # this thread's connection is open
    server.freeze()
    try:
        with pytest.raises(StateOutcomeUnknownError):
            store.increment("counter:hung")
    finally:
        server.thaw()
    assert store.get("counter:hung") == 2  # it ran once the server resumed


def test_a_write_that_could_not_be_sent_is_not_an_unknown_outcome(
    server: RedisServer, store: KVStore
) -> None:
    """No server to take it (the connection refused): the write never ran. (Through redis-py's
    pool a frozen server still takes a command on a connection the kernel accepted, so a write
    that times out there is unknown even on a fresh connection: it runs when the server
    resumes, as the test above shows.)"""
    store.increment("counter:unsent")
    server.kill()
    with pytest.raises(StateUnavailableError) as raised:
        store.increment("counter:unsent")
    assert not isinstance(raised.value, StateOutcomeUnknownError)
