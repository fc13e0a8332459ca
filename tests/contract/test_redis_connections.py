"""The Redis store's connections, redis-py's pool: shared by the threads, replaced when one
broke while idle, a process of their own in a forked child; scripts the server forgot loaded
again. Against a private redis-server (it kills clients and flushes scripts, which the shared
server's other users must not see)."""

from __future__ import annotations

import os
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


def test_threads_share_the_pool_and_close_closes_its_connections(
    store: KVStore, redis_url: str
) -> None:
    before = len(_clients(redis_url))
    barrier = threading.Barrier(4)
    done: list[int] = []

    def work() -> None:
        barrier.wait()
        for _ in range(25):
            done.append(store.increment("counter:threads"))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert store.get("counter:threads") == 100 and sorted(done) == list(range(1, 101))
    assert 1 <= len(_clients(redis_url)) - before <= 4  # at most one a thread, kept for reuse
    store.close()
    assert len(_clients(redis_url)) <= before


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_forked_child_sends_on_connections_of_its_own(store: KVStore) -> None:
    """The parent's connection is open when it forks; the child must not read answers meant
    for the parent (or the parent the child's) on that shared socket."""
    assert store.increment("counter:fork") == 1  # the parent's connection, open
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        try:
            values = [store.increment("counter:fork") for _ in range(200)]
            ok = values == sorted(values) and store.get("counter:fork") >= values[-1]
            os.write(write, b"ok" if ok else repr(values).encode()[:500])
        finally:
            os._exit(0)
    parent = [store.increment("counter:fork") for _ in range(200)]
    os.waitpid(pid, 0)
    assert os.read(read, 600) == b"ok"
    assert parent == sorted(parent)
    assert store.get("counter:fork") == 401


def test_a_connection_that_broke_while_idle_is_replaced(store: KVStore, redis_url: str) -> None:
    assert store.set_if_absent("upd:1", {"s": "claim"})
    admin = redis.Redis.from_url(redis_url)
    own = [c for c in admin.client_list() if c["cmd"] == "set"]
    assert own, "the store's connection is not listed"
    for client in own:
        admin.client_kill_filter(_id=client["id"])
    # The pool finds the connection closed when it hands it out, and opens a new one.
    assert store.get("upd:1") == {"s": "claim"}
    assert store.set_if_absent_and_increment("upd:2", {"s": "claim"}, 60_000, []) == []


def test_a_script_the_server_forgot_is_loaded_again(store: KVStore, redis_url: str) -> None:
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
