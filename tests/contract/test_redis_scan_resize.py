"""The Redis store's scan pages when Redis resizes its table between them.

A SCAN call made again does not answer the same batch once the table grew or shrank: a rehash
moves each bucket's keys in reverse order, and the buckets one call visits change with the
keys around them. A page that ended inside a batch and resumed after "its last key, where it
left it" lost the keys that moved before that key (the backfill's test of the phases lost an
hour counter that way in CI, where the other tests' keys resize the shared Redis). These tests
run a redis-server of their own, whose table only their keys fill, and resize it between every
two pages; and they script SCAN's answers for the one case a batch is still cut.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
import redis

from telegram_bot.state import InvalidValueError, KVStore, open_store
from tests.redis_server import private_redis

PREFIX = "activity:h:"


@pytest.fixture
def own_redis() -> Iterator[tuple[KVStore, redis.Redis]]:
    with private_redis() as url:
        store = open_store(url, prefix="t:")
        client = redis.Redis.from_url(url)
        try:
            yield store, client
        finally:
            client.close()
            store.close()


def resize(client: redis.Redis, step: int, rng: random.Random) -> None:
    """Grow the table past its next size, or empty those keys again (the server shrinks it)."""
    if step % 2:
        pipe = client.pipeline(transaction=False)
        for i in range(rng.choice([8, 30, 100])):
            pipe.set(f"churn:{i}", 1)
        pipe.execute()
    else:
        churn = list(client.scan_iter(match="churn:*", count=1000))
        if churn:
            client.delete(*churn)


def test_a_walk_returns_every_key_while_the_table_resizes_between_pages(
    own_redis: tuple[KVStore, redis.Redis],
) -> None:
    """400 walks of 16 keys (named anew each walk: where they fall in the table changes) in
    pages of 2, the table resized between every two pages. The pages cut inside a batch and
    resumed after their last key lost a key, or never ended, in about 1 walk of 20 here."""
    store, client = own_redis
    rng = random.Random(17)
    failed: list[str] = []
    for walk in range(400):
        client.flushdb()
        wanted = {f"{PREFIX}{walk}:2026-12-04:{user}:01" for user in range(16)}
        for key in wanted:
            store.increment(key, 1)
        seen: set[str] = set()
        cursor: str | None = None
        for step in range(800):
            page, cursor = store.scan(PREFIX, cursor, 2)
            assert len(page) <= 2
            seen.update(page)
            if cursor is None:
                break
            resize(client, step + 1, rng)
        if cursor is not None:
            failed.append(f"walk {walk} did not end")
        elif seen != wanted:
            failed.append(f"walk {walk} lost {sorted(wanted - seen)}")
    assert not failed


class ScriptedScan:
    """SCAN answers in a script: each call's batch (raw keys) and next cursor, by call."""

    def __init__(self, answers: list[tuple[int, list[str]]]) -> None:
        self.answers: list[tuple[int, list[str]]] = []
        self.calls: list[tuple[int, int]] = []
        self.answer(answers)

    def answer(self, answers: list[tuple[int, list[str]]]) -> None:
        """From now on, these answers (keys named without the store's and the family's
        prefixes), from the first."""
        self.answers = [(c, [f"t:{PREFIX}{k}" for k in batch]) for c, batch in answers]
        self.calls.clear()

    def __call__(self, cursor: int, match: str, count: int) -> tuple[int, list[bytes]]:
        self.calls.append((cursor, count))
        next_cursor, batch = self.answers[min(len(self.calls) - 1, len(self.answers) - 1)]
        return next_cursor, [key.encode() for key in batch]


def scripted(
    store: KVStore, monkeypatch: pytest.MonkeyPatch, answers: list[tuple[int, list[str]]]
) -> ScriptedScan:
    scan = ScriptedScan(answers)
    monkeypatch.setattr(store.client, "scan", scan)  # type: ignore[attr-defined]
    return scan


def walk(store: KVStore, limit: int, cursor: str | None = None) -> list[str]:
    """Every page from ``cursor`` on (each at most ``limit`` keys), in order."""
    seen: list[str] = []
    for _ in range(1000):
        page, cursor = store.scan(PREFIX, cursor, limit)
        assert len(page) <= limit
        seen.extend(page)
        if cursor is None:
            return seen
    raise AssertionError("the walk did not end")


def test_one_buckets_keys_cut_by_the_limit_come_all_when_a_rehash_reversed_them(
    own_redis: tuple[KVStore, redis.Redis], monkeypatch: pytest.MonkeyPatch
) -> None:
    """One bucket holds a, b, c (its batch even with COUNT 1) and the limit is 2: the batch is
    cut. A rehash then reverses the bucket (c, b, a): b stands where the page left it, and the
    page after "b" would be only a. The cut's digest of {a, b} tells the batch changed."""
    store, _ = own_redis
    scan = scripted(store, monkeypatch, [(0, ["a", "b", "c"])])
    page, cursor = store.scan(PREFIX, None, 2)
    assert page == [PREFIX + "a", PREFIX + "b"]
    assert [count for _, count in scan.calls] == [10, 2, 1]  # fewer buckets, then one
    scan.answer([(0, ["c", "b", "a"])])  # the bucket after the rehash
    rest = walk(store, 2, cursor)
    assert PREFIX + "c" in rest


def test_a_page_stops_before_a_batch_that_does_not_fit(
    own_redis: tuple[KVStore, redis.Redis], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch that does not fit in what is left of a page starts the next page, from its
    own SCAN cursor: nothing of it is cut, so nothing depends on its order."""
    store, _ = own_redis
    scan = scripted(store, monkeypatch, [(7, ["a", "b"]), (9, ["c", "d", "e"]), (0, ["f"])])
    page, cursor = store.scan(PREFIX, None, 4)
    assert page == [PREFIX + "a", PREFIX + "b"]
    assert cursor == f"{PREFIX}b 7 0"
    scan.answer([(9, ["d", "e", "c"]), (0, ["f"])])  # reordered meanwhile
    assert walk(store, 4, cursor) == [PREFIX + k for k in "decf"]


def test_a_nearly_full_page_ends_without_another_call(
    own_redis: tuple[KVStore, redis.Redis], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With less than an eighth of the page left, the next batch starts the next page: no
    call is made whose batch would most likely not fit."""
    store, _ = own_redis
    first = [f"k{i:02d}" for i in range(90)]
    scan = scripted(store, monkeypatch, [(7, first), (0, ["x", "y"])])
    page, cursor = store.scan(PREFIX, None, 100)
    assert page == [PREFIX + k for k in first] and cursor == f"{PREFIX}k89 7 0"
    assert len(scan.calls) == 1


def test_cursors_of_the_version_before_and_malformed_digests(
    own_redis: tuple[KVStore, redis.Redis], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cut cursor without a digest (the version before) reads its batch again from the
    start: a key may come twice, none is lost. A digest that is not one is refused."""
    store, _ = own_redis
    scripted(store, monkeypatch, [(0, ["c", "b", "a"])])
    assert set(walk(store, 3, f"{PREFIX}b 0 2")) == {PREFIX + k for k in "abc"}
    for bad in ("zz", "0123456789abcdeg", "0123456789ABCDEF", "1 2"):
        with pytest.raises(InvalidValueError, match="cursor"):
            store.scan(PREFIX, f"{PREFIX}b 0 2 {bad}", 3)


def test_a_real_walk_cut_inside_one_bucket_resumes_after_what_it_returned(
    own_redis: tuple[KVStore, redis.Redis],
) -> None:
    """Against the server itself, pages of 1 over 40 keys (buckets of two or more keys are
    cut): every key exactly once while nothing changes."""
    store, _ = own_redis
    wanted = [f"{PREFIX}1:2026-12-04:{user}:01" for user in range(40)]
    for key in wanted:
        store.increment(key, 1)
    seen = walk(store, 1)
    assert sorted(seen) == sorted(wanted)
