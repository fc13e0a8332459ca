"""The KV contract, run against every backend available (memory, database, Redis).

Modelled on telega's ``storage.check`` and easytg's ``verifyStorageAdapter``: the same
assertions for every backend, TTLs below a second, and real concurrency.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

import pytest
from django.db import connections

from telegram_bot.errors import StateError
from telegram_bot.state import Increment, InvalidKeyError, InvalidValueError, KVStore, Put
from telegram_bot.state.base import Finished

T = TypeVar("T")

VALUES = [
    "plain",
    "юникод ✓ 🚀 中文",
    0,
    -42,
    2**53,
    3.5,
    True,
    False,
    [],
    {},
    [1, "two", {"three": [3.0, None, False]}],
    {"nested": {"deeper": {"list": ["é", "ü", "😀"], "n": -1}}, "null_inside": None},
]


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_it_round_trips_json_values(kv: KVStore, value: object) -> None:
    kv.set("session:roundtrip", value)
    assert kv.get("session:roundtrip") == value


def test_it_returns_none_for_a_missing_key(kv: KVStore) -> None:
    assert kv.get("session:missing") is None


def test_it_refuses_none_as_a_value(kv: KVStore) -> None:
    with pytest.raises(InvalidValueError, match="None"):
        kv.set("session:none", None)
    with pytest.raises(InvalidValueError):
        kv.compare_and_set("session:none", None, None)
    assert kv.get("session:none") is None


def test_it_refuses_values_that_are_not_json(kv: KVStore) -> None:
    for value in (float("nan"), object(), {1, 2}, b"bytes"):
        with pytest.raises(InvalidValueError):
            kv.set("session:bad", value)
    assert kv.get("session:bad") is None


@pytest.mark.parametrize(
    "key",
    [
        "nofamily",
        "unknown:key",
        "session:",
        "session:with space",
        "session:tab\there",
        "",
        ":x",
        "SESSION:x",
        "x" * 600,
    ],
)
def test_it_refuses_keys_outside_the_declared_families(kv: KVStore, key: str) -> None:
    with pytest.raises(InvalidKeyError):
        kv.set(key, 1)
    with pytest.raises(InvalidKeyError):
        kv.increment(key)


def test_it_refuses_bad_ttls(kv: KVStore) -> None:
    for ttl in (0, -5, 1.5, "100", True):
        with pytest.raises(InvalidValueError):
            kv.set("lock:ttl", 1, ttl_ms=ttl)  # type: ignore[arg-type]
    assert kv.get("lock:ttl") is None


def test_it_overwrites_and_deletes(kv: KVStore) -> None:
    kv.set("session:x", 1)
    kv.set("session:x", {"a": 2})
    assert kv.get("session:x") == {"a": 2}
    kv.delete("session:x")
    assert kv.get("session:x") is None
    kv.delete("session:x")  # deleting a missing key is fine


def test_a_ttl_under_a_second_expires_on_time(kv: KVStore) -> None:
    kv.set("lock:short", "v", ttl_ms=150)
    kv.set("lock:long", "v", ttl_ms=5000)
    kv.set("lock:forever", "v")
    assert kv.get("lock:short") == "v"
    time.sleep(0.3)
    assert kv.get("lock:short") is None
    assert kv.get("lock:long") == "v"
    assert kv.get("lock:forever") == "v"


def test_set_without_ttl_clears_an_earlier_ttl(kv: KVStore) -> None:
    kv.set("lock:k", 1, ttl_ms=150)
    kv.set("lock:k", 2)
    time.sleep(0.25)
    assert kv.get("lock:k") == 2


def test_compare_and_set_with_none_means_absent(kv: KVStore) -> None:
    assert kv.compare_and_set("lock:cas", None, "first") is True
    assert kv.compare_and_set("lock:cas", None, "second") is False
    assert kv.get("lock:cas") == "first"


def test_compare_and_set_with_none_matches_an_expired_key(kv: KVStore) -> None:
    kv.set("lock:cas", "old", ttl_ms=100)
    time.sleep(0.2)
    assert kv.compare_and_set("lock:cas", None, "new") is True
    assert kv.get("lock:cas") == "new"


def test_compare_and_set_replaces_only_the_expected_value(kv: KVStore) -> None:
    kv.set("workflow:1:2", {"step": 1, "data": ["a"]})
    assert kv.compare_and_set("workflow:1:2", {"step": 2}, {"step": 3}) is False
    # Key order does not matter: values are compared as JSON, not as text.
    assert kv.compare_and_set("workflow:1:2", {"data": ["a"], "step": 1}, {"step": 2}) is True
    assert kv.get("workflow:1:2") == {"step": 2}


def test_compare_and_set_does_not_match_an_expired_value(kv: KVStore) -> None:
    kv.set("lock:cas", "v", ttl_ms=100)
    time.sleep(0.2)
    assert kv.compare_and_set("lock:cas", "v", "w") is False
    assert kv.get("lock:cas") is None


def test_delete_if_equal_deletes_only_the_expected_value(kv: KVStore) -> None:
    kv.set("upd:77", {"s": "claim", "t": "a"})
    assert kv.delete_if_equal("upd:77", {"s": "claim", "t": "b"}) is False
    assert kv.get("upd:77") == {"s": "claim", "t": "a"}
    assert kv.delete_if_equal("upd:77", {"t": "a", "s": "claim"}) is True  # as JSON
    assert kv.get("upd:77") is None
    assert kv.delete_if_equal("upd:77", {"s": "claim", "t": "a"}) is False  # absent


def test_delete_if_equal_does_not_match_an_expired_value(kv: KVStore) -> None:
    kv.set("lock:del", "v", ttl_ms=100)
    time.sleep(0.2)
    assert kv.delete_if_equal("lock:del", "v") is False


def test_delete_if_equal_of_an_indexed_key_leaves_the_family_listing(kv: KVStore) -> None:
    kv.set("dlq:1", {"u": 1})
    kv.set("dlq:2", {"u": 2})
    assert kv.delete_if_equal("dlq:1", {"u": 9}) is False
    assert kv.delete_if_equal("dlq:1", {"u": 1}) is True
    assert list(kv.scan_all("dlq:")) == ["dlq:2"]


def test_compare_and_set_applies_its_ttl(kv: KVStore) -> None:
    assert kv.compare_and_set("lock:cas", None, 1, ttl_ms=150)
    assert kv.compare_and_set("lock:cas", 1, 2, ttl_ms=150)
    assert kv.get("lock:cas") == 2
    time.sleep(0.3)
    assert kv.get("lock:cas") is None


def test_set_if_absent(kv: KVStore) -> None:
    assert kv.set_if_absent("upd:1", "claim", ttl_ms=150) is True
    assert kv.set_if_absent("upd:1", "other") is False
    assert kv.get("upd:1") == "claim"
    time.sleep(0.3)
    assert kv.set_if_absent("upd:1", "again") is True
    assert kv.get("upd:1") == "again"


def test_increment_starts_from_zero_and_adds(kv: KVStore) -> None:
    assert kv.increment("counter:a") == 1
    assert kv.increment("counter:a", 5) == 6
    assert kv.increment("counter:a", -10) == -4
    assert kv.get("counter:a") == -4


def test_increment_ttl_applies_when_the_key_is_created(kv: KVStore) -> None:
    assert kv.increment("rl:user:1", 1, ttl_ms=200) == 1
    time.sleep(0.1)
    # A later increment with a long TTL does not extend the window.
    assert kv.increment("rl:user:1", 1, ttl_ms=60_000) == 2
    time.sleep(0.2)
    assert kv.get("rl:user:1") is None
    assert kv.increment("rl:user:1", 1, ttl_ms=60_000) == 1


def test_increment_refuses_a_key_that_holds_no_integer(kv: KVStore) -> None:
    for value in ("text", 1.5, {"n": 1}, True):
        kv.set("counter:bad", value)
        with pytest.raises(StateError):
            kv.increment("counter:bad")
        assert kv.get("counter:bad") == value


def test_increment_refuses_a_step_that_is_not_an_integer(kv: KVStore) -> None:
    for step in (1.5, "1", True):
        with pytest.raises(InvalidValueError):
            kv.increment("counter:a", step)  # type: ignore[arg-type]


def _walk(kv: KVStore, prefix: str, limit: int) -> list[str]:
    seen: list[str] = []
    cursor = None
    for _ in range(1000):
        page, cursor = kv.scan(prefix, cursor, limit)
        assert len(page) <= limit
        seen.extend(page)
        if cursor is None:
            return seen
    raise AssertionError("scan never finished")


def test_scan_pages_are_bounded_and_cover_every_live_key(kv: KVStore) -> None:
    live = {f"session:scan:{i:03d}" for i in range(37)}
    for key in live:
        kv.set(key, 1)
    for i in range(4):
        kv.set(f"session:scan:exp{i}", 1, ttl_ms=100)
    kv.set("session:scanner", 1)  # shares the text prefix "session:scan" but not "session:scan:"
    kv.set("session:other:1", 1)
    kv.set("workflow:scan:1", 1)
    time.sleep(0.2)
    for limit in (1, 5, 7, 100):
        seen = _walk(kv, "session:scan:", limit)
        assert set(seen) == live, f"limit {limit}"


def test_scan_of_an_empty_prefix_ends_at_once(kv: KVStore) -> None:
    assert kv.scan("dlq:", None, 10) == ([], None)


def test_scan_does_not_return_keys_that_expired(kv: KVStore) -> None:
    kv.set("lock:a", 1, ttl_ms=100)
    kv.set("lock:b", 1)
    time.sleep(0.2)
    assert _walk(kv, "lock:", 10) == ["lock:b"]


def test_scan_refuses_bad_arguments(kv: KVStore) -> None:
    with pytest.raises(InvalidKeyError):
        kv.scan("", None, 10)
    with pytest.raises(InvalidKeyError):
        kv.scan("nofamily:", None, 10)
    for limit in (0, -1, 10_000, 2.5):
        with pytest.raises(InvalidValueError):
            kv.scan("lock:", None, limit)  # type: ignore[arg-type]


def test_scan_refuses_a_cursor_outside_its_prefix(kv: KVStore) -> None:
    """A cursor is a position inside the prefix: a foreign one (a hand-edited page link) is
    refused instead of walking the families between it and the prefix."""
    kv.set("activity:1", 1)
    kv.set("counter:1", 1)
    kv.set("dlq:1", 1)
    kv.set("dlq:2", 1)
    kv.set("session:scan:1", 1)
    kv.set("session:scanner", 1)
    for prefix, cursor in [
        ("dlq:", "activity:"),
        ("dlq:", "a"),
        ("dlq:", ""),
        ("dlq:", "dl"),
        ("dlq:", "counter:0"),
        ("session:scan:", "session:scanner"),
        ("session:scan:", "session:"),
        ("dlq:", "dlq:" + "9" * 600),
    ]:
        with pytest.raises(InvalidValueError, match="cursor"):
            kv.scan(prefix, cursor, 10)
    with pytest.raises(InvalidValueError, match="cursor"):
        kv.scan("dlq:", 5, 10)  # type: ignore[arg-type]


def test_scan_cursors_it_returns_start_with_the_prefix(kv: KVStore) -> None:
    for i in range(7):
        kv.set(f"dlq:{i}", i)
    kv.set("activity:1", 1)
    kv.set("session:1", 1)
    seen: list[str] = []
    cursor = None
    while True:
        page, cursor = kv.scan("dlq:", cursor, 3)
        seen.extend(page)
        if cursor is None:
            break
        assert cursor.startswith("dlq:")
    assert sorted(set(seen)) == [f"dlq:{i}" for i in range(7)]


def test_ping_answers(kv: KVStore) -> None:
    kv.ping()


def test_eight_threads_incrementing_end_at_exactly_1600(kv: KVStore) -> None:
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def work() -> None:
        try:
            start.wait()
            for _ in range(200):
                kv.increment("counter:threads")
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert kv.get("counter:threads") == 1600


def test_threads_racing_compare_and_set_have_one_winner_per_round(kv: KVStore) -> None:
    rounds, workers = 25, 8
    wins = [0] * rounds
    lock = threading.Lock()
    barrier = threading.Barrier(workers)
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for round_no in range(rounds):
                barrier.wait()
                expected = None if round_no == 0 else round_no - 1
                if kv.compare_and_set("lock:race", expected, round_no):
                    with lock:
                        wins[round_no] += 1
                barrier.wait()
        except BaseException as exc:
            errors.append(exc)
            barrier.abort()
        finally:
            connections.close_all()

    threads = [threading.Thread(target=work) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert wins == [1] * rounds


DONE = {"s": "done"}


def test_apply_once_applies_every_op_and_the_marker(kv: KVStore) -> None:
    ops = [
        Increment("stats:c:d:u", 2),
        Increment("activity:c:d", 1, ttl_ms=60_000),
        Put("last_message:c:u", {"at": 5}),
        Put("msg:c:1", {"t": "hi"}, ttl_ms=150),
    ]
    assert kv.apply_once("upd:9", DONE, ops, marker_ttl_ms=60_000) is True
    assert kv.get("stats:c:d:u") == 2
    assert kv.get("activity:c:d") == 1
    assert kv.get("last_message:c:u") == {"at": 5}
    assert kv.get("upd:9") == DONE
    time.sleep(0.25)
    assert kv.get("msg:c:1") is None  # the op's own TTL


def test_apply_once_does_nothing_the_second_time(kv: KVStore) -> None:
    ops = [Increment("stats:c:d:u", 1), Put("last_message:c:u", 1)]
    assert kv.apply_once("upd:9", DONE, ops) is True
    assert (
        kv.apply_once("upd:9", DONE, [Increment("stats:c:d:u", 1), Put("last_message:c:u", 2)])
        is False
    )
    assert kv.get("stats:c:d:u") == 1
    assert kv.get("last_message:c:u") == 1


def test_apply_once_runs_over_a_claim_or_an_expired_marker(kv: KVStore) -> None:
    kv.set("upd:9", {"s": "claim", "o": "me"})
    assert kv.apply_once("upd:9", DONE, [Increment("counter:x")]) is True
    kv.set("upd:10", DONE, ttl_ms=100)
    time.sleep(0.2)
    assert kv.apply_once("upd:10", DONE, [Increment("counter:x")]) is True
    assert kv.get("counter:x") == 2


def test_apply_once_writes_nothing_when_an_op_cannot_apply(kv: KVStore) -> None:
    kv.set("counter:text", "not a number")
    with pytest.raises(StateError):
        kv.apply_once(
            "upd:9",
            DONE,
            [Increment("counter:a"), Increment("counter:text"), Put("last_message:c:u", 1)],
        )
    assert kv.get("counter:a") is None
    assert kv.get("last_message:c:u") is None
    assert kv.get("upd:9") is None


def test_apply_once_validates_keys_before_writing(kv: KVStore) -> None:
    with pytest.raises(InvalidKeyError):
        kv.apply_once("upd:9", DONE, [Increment("counter:a"), Put("nofamily", 1)])
    with pytest.raises(InvalidValueError):
        kv.apply_once("upd:9", DONE, [Put("counter:a", None)])
    assert kv.get("counter:a") is None


def test_threads_applying_one_update_apply_it_once(kv: KVStore) -> None:
    wins: list[bool] = []
    barrier = threading.Barrier(8)

    def work() -> None:
        try:
            barrier.wait()
            for n in range(20):
                wins.append(kv.apply_once(f"upd:{n}", DONE, [Increment("counter:once")]))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wins.count(True) == 20
    assert kv.get("counter:once") == 20


CLAIM = {"s": "claim", "o": "me"}
DEAD = {"s": "dead"}


def test_set_if_absent_and_increment_claims_and_counts_in_one_step(kv: KVStore) -> None:
    kv.increment("mod:fl:1:2:3", 4)
    counters = [Increment("mod:fl:1:2:3"), Increment("counter:new", 2, ttl_ms=150)]
    assert kv.set_if_absent_and_increment("upd:9", CLAIM, 60_000, counters) == [5, 2]
    assert kv.get("upd:9") == CLAIM
    assert kv.get("mod:fl:1:2:3") == 5 and kv.get("counter:new") == 2
    time.sleep(0.25)
    assert kv.get("counter:new") is None  # the TTL applied when it created the key
    assert kv.set_if_absent_and_increment("upd:10", CLAIM, 60_000, []) == []
    assert kv.get("upd:10") == CLAIM


def test_set_if_absent_and_increment_counts_nothing_when_the_key_is_there(kv: KVStore) -> None:
    kv.set("upd:9", DONE)
    assert kv.set_if_absent_and_increment("upd:9", CLAIM, 60_000, [Increment("counter:a")]) is None
    assert kv.set_if_absent_and_increment("upd:9", CLAIM, 60_000, []) is None
    assert kv.get("upd:9") == DONE and kv.get("counter:a") is None
    kv.set("upd:10", DONE, ttl_ms=100)
    time.sleep(0.2)  # expired: claimed again
    assert kv.set_if_absent_and_increment("upd:10", CLAIM, 60_000, [Increment("counter:a")]) == [1]


def test_set_if_absent_and_increment_writes_nothing_when_a_counter_cannot_apply(
    kv: KVStore,
) -> None:
    kv.set("counter:text", "not a number")
    with pytest.raises(StateError):
        kv.set_if_absent_and_increment(
            "upd:9", CLAIM, 60_000, [Increment("counter:a"), Increment("counter:text")]
        )
    assert kv.get("upd:9") is None and kv.get("counter:a") is None
    with pytest.raises(InvalidValueError):
        kv.set_if_absent_and_increment("upd:9", CLAIM, 60_000, [Put("counter:a", 1)])  # type: ignore[list-item]
    with pytest.raises(InvalidKeyError):
        kv.set_if_absent_and_increment("upd:9", CLAIM, 60_000, [Increment("nofamily")])
    assert kv.get("upd:9") is None


def _finish(kv: KVStore, key: str = "upd:9", **kwargs: object) -> Finished | None:
    arguments: dict[str, object] = {
        "claim": CLAIM, "claim_ttl_ms": 60_000, "done": DONE, "done_ttl_ms": 60_000,
    }  # fmt: skip
    return kv.claim_or_finish(key, **{**arguments, **kwargs})  # type: ignore[arg-type]


def test_claim_or_finish_counts_applies_and_marks_done_in_one_step(kv: KVStore) -> None:
    kv.increment("mod:fl:1:2:3", 4)
    kv.increment("stats:c:1", 10)
    finished = _finish(
        kv,
        increments=[Increment("mod:fl:1:2:3"), Increment("counter:new", 2, ttl_ms=150)],
        triggers=[7, None],
        marker_key="upd:9:stats.count",
        ops=[Increment("stats:c:1", 3), Put("stats:p:1", {"a": 1}), Increment("stats:c:2")],
    )
    assert finished == Finished(True, [5, 2])
    assert kv.get("upd:9") == DONE and kv.get("upd:9:stats.count") == DONE
    assert kv.get("mod:fl:1:2:3") == 5 and kv.get("counter:new") == 2
    assert kv.get("stats:c:1") == 13 and kv.get("stats:p:1") == {"a": 1}
    assert kv.get("stats:c:2") == 1
    time.sleep(0.25)
    assert kv.get("counter:new") is None  # the TTL applied when it created the key
    assert _finish(kv, "upd:10") == Finished(True, [])  # nothing but the done value
    assert kv.get("upd:10") == DONE


def test_claim_or_finish_only_claims_when_a_counter_meets_its_trigger(kv: KVStore) -> None:
    kv.increment("mod:fl:1:2:3", 4)
    finished = _finish(
        kv,
        increments=[Increment("counter:a"), Increment("mod:fl:1:2:3")],
        triggers=[None, 5],
        marker_key="upd:9:stats.count",
        ops=[Increment("stats:c:1")],
    )
    assert finished == Finished(False, [1, 5])
    assert kv.get("upd:9") == CLAIM  # as set_if_absent_and_increment leaves it
    assert kv.get("upd:9:stats.count") is None and kv.get("stats:c:1") is None
    assert kv.get("counter:a") == 1 and kv.get("mod:fl:1:2:3") == 5
    past = _finish(kv, "upd:10", increments=[Increment("mod:fl:1:2:3")], triggers=[5])
    assert past == Finished(True, [6])  # past the trigger: it acted once already


def test_claim_or_finish_writes_nothing_when_the_key_or_the_marker_is_there(kv: KVStore) -> None:
    kv.set("upd:9", {"s": "released"}, ttl_ms=60_000)
    ops = [Increment("stats:c:1")]
    assert _finish(kv, increments=[Increment("counter:a")], triggers=[None], ops=ops) is None
    kv.set("upd:10:stats.count", DONE)
    assert _finish(kv, "upd:10", marker_key="upd:10:stats.count", ops=ops) is None
    assert kv.get("upd:10") is None and kv.get("counter:a") is None
    assert kv.get("stats:c:1") is None
    kv.set("upd:11:stats.count", DEAD)  # only a marker holding the done value stops it
    assert _finish(kv, "upd:11", marker_key="upd:11:stats.count", ops=ops) == Finished(True, [])
    assert kv.get("stats:c:1") == 1


def test_claim_or_finish_writes_nothing_when_an_increment_cannot_apply(kv: KVStore) -> None:
    kv.set("counter:text", "not a number")
    for increments, ops in (
        ([Increment("counter:a"), Increment("counter:text")], [Increment("stats:c:1")]),
        ([Increment("counter:a")], [Increment("stats:c:1"), Increment("counter:text")]),
    ):
        with pytest.raises(StateError):
            _finish(kv, increments=increments, triggers=[None] * len(increments), ops=ops)
        assert kv.get("upd:9") is None and kv.get("counter:a") is None
        assert kv.get("stats:c:1") is None
    with pytest.raises(InvalidValueError):
        _finish(kv, increments=[Increment("counter:a")], triggers=[])
    with pytest.raises(InvalidValueError):
        _finish(kv, increments=[Put("counter:a", 1)], triggers=[None])
    with pytest.raises(InvalidValueError):
        _finish(kv, increments=[Increment("counter:a")], triggers=["5"])
    with pytest.raises(InvalidKeyError):
        _finish(kv, marker_key="nofamily")
    assert kv.get("upd:9") is None and kv.get("counter:a") is None


def _each_update_from_threads(work: Callable[[int], T], threads: int = 8) -> list[T]:
    """``work(n)`` for updates 0-19 from ``threads`` threads started together; every result."""
    results: list[T] = []
    barrier = threading.Barrier(threads)

    def run() -> None:
        try:
            barrier.wait()
            results.extend(work(n) for n in range(20))
        finally:
            connections.close_all()

    started = [threading.Thread(target=run) for _ in range(threads)]
    for thread in started:
        thread.start()
    for thread in started:
        thread.join()
    return results


def test_threads_finishing_one_update_apply_it_once(kv: KVStore) -> None:
    results = _each_update_from_threads(
        lambda n: _finish(
            kv,
            f"upd:{n}",
            increments=[Increment("counter:claimed")],
            triggers=[None],
            marker_key=f"upd:{n}:stats.count",
            ops=[Increment("stats:c:applied")],
        )
    )
    won = [r for r in results if r is not None]
    assert len(won) == 20 and sorted(r.values[0] for r in won) == list(range(1, 21))
    assert kv.get("counter:claimed") == 20 and kv.get("stats:c:applied") == 20


def test_threads_claiming_one_update_count_it_once(kv: KVStore) -> None:
    results = _each_update_from_threads(
        lambda n: kv.set_if_absent_and_increment(
            f"upd:{n}", CLAIM, 60_000, [Increment("counter:claimed")]
        )
    )
    won = [r for r in results if r is not None]
    assert len(won) == 20 and sorted(r[0] for r in won) == list(range(1, 21))
    assert kv.get("counter:claimed") == 20


def test_scan_never_skips_a_live_key_when_others_expire_between_pages(kv: KVStore) -> None:
    live = {f"stats:w:{i:02d}" for i in range(0, 30, 3)}
    for i in range(30):
        key = f"stats:w:{i:02d}"
        kv.set(key, i) if key in live else kv.set(key, i, ttl_ms=150)
    seen, cursor = kv.scan("stats:w:", None, 4)
    time.sleep(0.25)  # everything but the live keys expires between two pages
    while cursor is not None:
        page, cursor = kv.scan("stats:w:", cursor, 4)
        seen.extend(page)
    assert live <= set(seen)


def test_a_key_written_twice_in_one_step_takes_both_writes(kv: KVStore) -> None:
    """The Redis scripts create an absent counter with a SET of its step and add to a present
    one: the second write of a key made by the first adds to it, whichever list each is in."""
    finished = _finish(
        kv,
        increments=[Increment("counter:a", 2, ttl_ms=150)],
        triggers=[None],
        ops=[Increment("counter:a", 3, ttl_ms=60_000), Increment("stats:c:1"),
             Increment("stats:c:1", 4)],
    )  # fmt: skip
    assert finished == Finished(True, [2])
    assert kv.get("counter:a") == 5 and kv.get("stats:c:1") == 5
    assert kv.apply_once("upd:10", DONE, [Increment("stats:c:2", -1), Increment("stats:c:2", 7)])
    assert kv.get("stats:c:2") == 6
    time.sleep(0.25)
    assert kv.get("counter:a") is None  # the TTL of the write that created it


def test_an_increment_keeps_the_ttl_of_the_counter_it_adds_to(kv: KVStore) -> None:
    kv.increment("counter:a", 1, ttl_ms=150)
    kv.increment("stats:c:1", 1, ttl_ms=150)
    assert _finish(kv, increments=[Increment("counter:a", ttl_ms=60_000)], triggers=[None])
    assert kv.apply_once("upd:10", DONE, [Increment("stats:c:1", ttl_ms=60_000)])
    assert kv.get("counter:a") == 2 and kv.get("stats:c:1") == 2
    time.sleep(0.25)
    assert kv.get("counter:a") is None and kv.get("stats:c:1") is None


@pytest.mark.parametrize("step", [2**63, -(2**63) - 1])
def test_a_step_outside_64_bits_is_refused_before_anything_is_written(
    kv: KVStore, step: int
) -> None:
    wide = Increment("counter:b", step)
    for write in (
        lambda: kv.apply_once("upd:9", DONE, [Increment("counter:a"), wide]),
        lambda: _finish(kv, ops=[Increment("counter:a"), wide]),
        lambda: _finish(kv, increments=[wide], triggers=[None]),
        lambda: kv.set_if_absent_and_increment("upd:9", CLAIM, 60_000, [wide]),
    ):
        with pytest.raises(InvalidValueError, match="out of range"):
            write()
    assert kv.get("upd:9") is None and kv.get("counter:a") is None
    assert kv.get("counter:b") is None
    kv.apply_once("upd:9", DONE, [Increment("counter:b", 2**63 - 1)])
    assert kv.get("counter:b") == 2**63 - 1
