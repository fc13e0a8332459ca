"""The Redis store's own connections: one per thread, replaced when it broke while idle, and
scripts the server forgot sent whole. Against a private redis-server (it kills clients and
flushes scripts, which the shared server's other users must not see)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
import redis

from telegram_bot.errors import StateUnavailableError
from telegram_bot.state import Increment, KVStore, open_store
from tests.redis_server import private_redis


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    with private_redis() as url:
        yield url


@pytest.fixture
def store(redis_url: str) -> Iterator[KVStore]:
    opened = open_store(redis_url, prefix="conn:")
    yield opened
    opened.close()


def _clients(url: str) -> list[dict[str, object]]:
    return redis.Redis.from_url(url).client_list()


def test_each_thread_sends_on_a_connection_of_its_own(store: KVStore, redis_url: str) -> None:
    before = len(_clients(redis_url))
    barrier = threading.Barrier(4)
    finished = threading.Barrier(5)  # the four threads and this one
    release = threading.Event()
    done: list[int] = []

    def work() -> None:
        barrier.wait()
        for _ in range(25):
            done.append(store.increment("counter:threads"))
        # Alive while the connections are counted: a finished thread's connection goes with
        # its thread-local state whenever the garbage collector takes it.
        finished.wait()
        release.wait(30)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    finished.wait(30)
    try:
        assert store.get("counter:threads") == 100 and sorted(done) == list(range(1, 101))
        assert len(_clients(redis_url)) - before >= 4  # threads share no connection
    finally:
        release.set()
        for thread in threads:
            thread.join()
    store.close()  # closes them too
    assert len(_clients(redis_url)) <= before


def test_a_connection_that_broke_while_idle_is_replaced(store: KVStore, redis_url: str) -> None:
    assert store.set_if_absent("upd:1", {"s": "claim"})
    admin = redis.Redis.from_url(redis_url)
    own = [c for c in admin.client_list() if c["cmd"] == "set"]
    assert own, "the store's connection is not listed"
    for client in own:
        admin.client_kill_filter(_id=client["id"])
    # The next command finds its connection closed and is sent once more on a new one.
    assert store.get("upd:1") == {"s": "claim"}
    assert store.set_if_absent_and_increment("upd:2", {"s": "claim"}, 60_000, []) == []


def test_a_script_the_server_forgot_is_sent_whole(store: KVStore, redis_url: str) -> None:
    assert store.increment("counter:script") == 1
    redis.Redis.from_url(redis_url).script_flush()
    assert store.increment("counter:script") == 2
    assert store.set_if_absent_and_increment(
        "upd:3", {"s": "claim"}, 60_000, [Increment("counter:script")]
    ) == [3]
    assert store.apply_once("upd:3:route", {"s": "done"}, [Increment("counter:script")])
    assert store.get("counter:script") == 4


def test_a_server_that_does_not_answer_is_unavailable() -> None:
    with private_redis() as url:
        pass  # stopped: nothing listens on its port any more
    store = open_store(url)
    with pytest.raises(StateUnavailableError):
        store.get("counter:x")
    with pytest.raises(StateUnavailableError):
        store.set_if_absent_and_increment("upd:4", {"s": "claim"}, 1000, [Increment("counter:x")])
    store.close()
