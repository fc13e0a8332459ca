"""Packed keys (``<group>#<field>``, ``telegram_bot.state.keys.PACK``) on every backend: a key
like any other to every caller (issue 45: Redis keeps a group as one small hash, so a family
written once per message costs a fraction of a Redis key per message)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from django.db import connections

from telegram_bot.errors import StateError
from telegram_bot.state import Increment, InvalidKeyError, KVStore, Put
from telegram_bot.state.base import Finished
from tests.conftest import make_store

DONE = {"s": "done"}
CLAIM = {"s": "claim", "o": "me"}


def test_a_packed_key_takes_every_operation(kv: KVStore) -> None:
    kv.set("msg:-1:7#1", {"u": 1})
    kv.set("msg:-1:7#2", {"u": 2}, ttl_ms=60_000)
    kv.set("msg:-1:8", "plain")
    assert kv.get("msg:-1:7#1") == {"u": 1} and kv.get("msg:-1:7#3") is None
    assert kv.get_many(["msg:-1:7#2", "msg:-1:8", "msg:-1:7#3", "msg:-1:9#1"]) == [
        {"u": 2}, "plain", None, None,
    ]  # fmt: skip
    assert not kv.set_if_absent("msg:-1:7#1", {"u": 9})
    assert kv.set_if_absent("msg:-1:7#3", {"u": 3}, ttl_ms=60_000)
    assert kv.compare_and_set("msg:-1:7#3", {"u": 3}, {"u": 4})
    assert not kv.compare_and_set("msg:-1:7#3", {"u": 3}, {"u": 5})
    assert kv.compare_and_set("msg:-1:7#4", None, {"u": 6})
    assert kv.get("msg:-1:7#3") == {"u": 4} and kv.get("msg:-1:7#4") == {"u": 6}
    assert not kv.delete_if_equal("msg:-1:7#4", {"u": 7})
    assert kv.delete_if_equal("msg:-1:7#4", {"u": 6})
    kv.delete("msg:-1:7#3")
    assert kv.get("msg:-1:7#3") is None and kv.get("msg:-1:7#4") is None
    assert kv.get("msg:-1:7#1") == {"u": 1}  # the others of its group stay
    assert kv.increment("counter:g#a", 2, ttl_ms=60_000) == 2
    assert kv.increment("counter:g#a", 3) == 5
    kv.set("counter:g#t", "text")
    with pytest.raises(StateError):
        kv.increment("counter:g#t")
    assert sorted(kv.scan_all("msg:-1:")) == ["msg:-1:7#1", "msg:-1:7#2", "msg:-1:8"]
    assert sorted(kv.scan_all("msg:-1:7#")) == ["msg:-1:7#1", "msg:-1:7#2"]
    assert list(kv.scan_all("msg:-1:7#2")) == ["msg:-1:7#2"]


def test_packed_keys_in_one_atomic_step(kv: KVStore) -> None:
    ops = [Increment("counter:g#n", 2, 60_000), Put("msg:-1:1#5", {"u": 1}, 60_000)]
    assert kv.apply_once("upd:d:1#9", DONE, ops, 60_000)
    assert not kv.apply_once("upd:d:1#9", DONE, ops, 60_000)  # the marker holds it
    assert kv.get("counter:g#n") == 2 and kv.get("msg:-1:1#5") == {"u": 1}
    kv.set("counter:g#t", "text")
    with pytest.raises(StateError):
        kv.apply_once("upd:d:1#10", DONE, [Increment("counter:g#n"), Increment("counter:g#t")])
    assert kv.get("counter:g#n") == 2 and kv.get("upd:d:1#10") is None  # nothing at all


def test_claim_or_finish_writes_done_at_its_done_key_and_may_leave_the_marker(
    kv: KVStore,
) -> None:
    def finish(update: int, **kwargs: object) -> Finished | None:
        return kv.claim_or_finish(
            f"upd:{update}",
            claim=CLAIM,
            claim_ttl_ms=60_000,
            done=DONE,
            done_ttl_ms=60_000,
            marker_key=f"upd:{update}:stats.count",
            done_key=f"upd:d:0#{update}",
            **kwargs,  # type: ignore[arg-type]
        )

    ops = [Increment("stats:c:1")]
    assert finish(1, ops=ops, write_marker=False) == Finished(True, [])
    assert kv.get("upd:d:0#1") == DONE
    assert kv.get("upd:1") is None and kv.get("upd:1:stats.count") is None
    assert finish(1, ops=ops, write_marker=False) is None  # its done key is set
    assert finish(2, ops=ops) == Finished(True, [])  # the marker written as before
    assert kv.get("upd:2:stats.count") == DONE and kv.get("upd:2") is None
    kv.set("upd:3:stats.count", DONE)  # a unit committed before: still checked
    assert finish(3, ops=ops, write_marker=False) is None
    kv.set("upd:4", CLAIM, 60_000)
    assert finish(4, ops=ops, write_marker=False) is None
    assert kv.get("stats:c:1") == 2
    claimed = finish(5, increments=[Increment("counter:a")], triggers=[1], write_marker=False)
    assert claimed == Finished(False, [1])  # a trigger met: the claim, at the key
    assert kv.get("upd:5") == CLAIM and kv.get("upd:d:0#5") is None


def test_a_claim_waits_for_the_key_that_must_be_absent_too(kv: KVStore) -> None:
    kv.set("upd:d:0#1", DONE, 60_000)
    claim = kv.set_if_absent_and_increment(
        "upd:1", CLAIM, 60_000, [Increment("counter:a")], absent_key="upd:d:0#1"
    )
    assert claim is None
    assert (
        kv.set_if_absent_and_increment("upd:1", CLAIM, 60_000, [], absent_key="upd:d:0#1") is None
    )
    assert kv.get("upd:1") is None and kv.get("counter:a") is None
    assert kv.set_if_absent_and_increment(
        "upd:2", CLAIM, 60_000, [Increment("counter:a")], absent_key="upd:d:0#2"
    ) == [1]
    assert kv.set_if_absent_and_increment("upd:3", CLAIM, 60_000, [], absent_key="upd:d:0#3") == []
    assert kv.get("upd:2") == CLAIM and kv.get("upd:3") == CLAIM


def test_a_group_of_fields_with_a_ttl_expires(kv: KVStore) -> None:
    kv.set("msg:-1:1#1", {"u": 1}, ttl_ms=150)
    kv.increment("counter:g#1", 1, ttl_ms=150)
    time.sleep(0.3)
    assert kv.get("msg:-1:1#1") is None and kv.get("counter:g#1") is None
    assert list(kv.scan_all("msg:-1:")) == []


@pytest.mark.parametrize("key", ["msg:a#b#c", "msg:a#", "msg:#a", "dlq:1#2", "msg:a# b"], ids=str)
def test_a_packed_key_has_one_separator_inside_it(kv: KVStore, key: str) -> None:
    with pytest.raises(InvalidKeyError):
        kv.set(key, 1)


@pytest.fixture
def redis_kv(request: pytest.FixtureRequest) -> Iterator[KVStore]:
    yield from make_store(request, "redis")


def test_redis_keeps_a_group_as_one_small_hash_living_as_its_longest_field(
    redis_kv: KVStore,
) -> None:
    kv = redis_kv
    client = kv.client  # type: ignore[attr-defined]
    for n in range(100):
        kv.apply_once(f"upd:d:7#{n}", DONE, [], 60_000)
    group = f"{kv.prefix}upd:d:7#"
    assert [k.decode() for k in client.keys(f"{kv.prefix}upd:*")] == [group]
    assert client.hlen(group) == 100
    assert client.object("encoding", group) == b"listpack"  # the small encoding
    assert 59_000 < client.pttl(group) <= 60_000
    kv.set("upd:d:7#0", DONE, ttl_ms=120_000)  # a longer-lived field extends the group
    assert client.pttl(group) > 60_000
    kv.set("upd:d:7#1", DONE, ttl_ms=1_000)  # a shorter one does not shorten it
    assert client.pttl(group) > 60_000
    kv.set("upd:d:7#2", DONE)  # one without a TTL makes it permanent
    assert client.pttl(group) == -1
    kv.set("msg:-1:1#1", {"u": 1})
    kv.set("msg:-1:1#2", {"u": 2}, ttl_ms=60_000)  # the group keeps no TTL: a field has none
    assert client.pttl(f"{kv.prefix}msg:-1:1#") == -1


def test_redis_scans_a_group_larger_than_a_page_whole(redis_kv: KVStore) -> None:
    kv = redis_kv
    for n in range(60):
        kv.set(f"msg:-5:1#{n}", n, ttl_ms=60_000)
    for n in range(30):
        kv.set(f"msg:-5:{n + 2}#0", n, ttl_ms=60_000)
    found: list[str] = []
    cursor: str | None = None
    while True:
        page, cursor = kv.scan("msg:-5:", cursor, limit=7)
        assert len(page) <= 7
        found += page
        if cursor is None:
            break
    expected = {f"msg:-5:1#{n}" for n in range(60)} | {f"msg:-5:{n + 2}#0" for n in range(30)}
    assert set(found) == expected


def test_threads_finishing_one_update_at_its_done_key_apply_it_once(kv: KVStore) -> None:
    """Eight threads deliver updates 0-19 each: every update is finished once, its done value
    in its group, whatever backend holds the groups (the database's rows, Redis's hash)."""
    results: list[Finished | None] = []
    barrier = threading.Barrier(8)

    def run() -> None:
        try:
            barrier.wait()
            for n in range(20):
                results.append(
                    kv.claim_or_finish(
                        f"upd:{n}",
                        claim=CLAIM,
                        claim_ttl_ms=60_000,
                        done=DONE,
                        done_ttl_ms=60_000,
                        increments=[Increment("counter:claimed")],
                        triggers=[None],
                        marker_key=f"upd:{n}:stats.count",
                        ops=[Increment("stats:c:applied")],
                        done_key=f"upd:d:0#{n}",
                        write_marker=False,
                    )
                )
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    won = [r for r in results if r is not None]
    assert len(won) == 20 and sorted(r.values[0] for r in won) == list(range(1, 21))
    assert kv.get("counter:claimed") == 20 and kv.get("stats:c:applied") == 20
    assert kv.get_many([f"upd:d:0#{n}" for n in range(20)]) == [DONE] * 20
    assert kv.get_many([f"upd:{n}" for n in range(20)]) == [None] * 20
