"""One page of dead letters costs a bounded number of store operations, whatever else is stored.

Before the ``dlq:`` index, a page on Redis walked the whole keyspace with SCAN (thousands of
calls with 200,000 unrelated keys) and then read each letter with its own GET.
"""

from __future__ import annotations

import redis
from django.db import connection
from django.test.utils import CaptureQueriesContext

from telegram_bot.state import open_store
from telegram_bot.state.dead_letters import DeadLetterStore
from telegram_bot.state.models import KVEntry
from tests.redis_server import command_calls, private_redis

PAGE = 50
LETTERS = 120  # three pages: 50, 50, 20
UNRELATED = 200_000


def _fill_unrelated(client: redis.Redis, count: int) -> None:
    families = ["stats:messages:-100", "msg:-100", "upd", "lock:jr", "rl:u", "dlqx", "#other"]
    batch: dict[str, str] = {}
    for n in range(count):
        batch[f"{families[n % len(families)]}:{n}"] = "1"
        if len(batch) == 10_000:
            client.mset(batch)
            batch.clear()
    if batch:
        client.mset(batch)


def _walk_costs(letters: DeadLetterStore, client: redis.Redis) -> tuple[list[int], list[int]]:
    """Per page: the commands the server ran (script internals included), the update ids."""
    costs: list[int] = []
    seen: list[int] = []
    cursor = None
    while True:
        client.config_resetstat()
        page, cursor = letters.page(cursor, PAGE)
        costs.append(command_calls(client))
        seen.extend(letter.update_id for letter in page)
        if cursor is None:
            return costs, seen


def test_a_redis_page_costs_the_same_with_200000_unrelated_keys() -> None:
    with private_redis() as url:
        client = redis.Redis.from_url(url)
        store = open_store(url)
        letters = DeadLetterStore(store, retention_ms=3_600_000)
        for update_id in range(LETTERS):
            letters.put({"update_id": update_id, "message": {"text": "x"}}, RuntimeError("boom"))
        letters.page(None, PAGE)  # loads the script once
        alone, seen_alone = _walk_costs(letters, client)
        _fill_unrelated(client, UNRELATED)
        assert client.dbsize() > UNRELATED
        crowded, seen_crowded = _walk_costs(letters, client)
        rounds = client.info("commandstats")
        store.close()
        client.close()
    assert sorted(seen_crowded) == list(range(LETTERS))
    assert seen_crowded == seen_alone
    assert crowded == alone  # not one command more for the unrelated keys
    assert all(cost <= PAGE + 10 for cost in crowded), crowded
    # The last page made two round trips: the index script and one MGET.
    assert rounds["cmdstat_evalsha"]["calls"] == 1
    assert rounds["cmdstat_mget"]["calls"] == 1
    assert "cmdstat_scan" not in rounds


def test_a_database_page_is_two_queries_with_many_unrelated_rows(db: None) -> None:
    store = open_store("db://")
    letters = DeadLetterStore(store, retention_ms=3_600_000)
    for update_id in range(LETTERS):
        letters.put({"update_id": update_id, "message": {"text": "x"}}, RuntimeError("boom"))
    KVEntry.objects.bulk_create(
        [KVEntry(key=f"stats:messages:-100:{n}", value="1") for n in range(20_000)]
        + [KVEntry(key=f"activity:{n}", value="1") for n in range(5_000)],
        batch_size=2_000,
    )
    seen: list[int] = []
    cursor = None
    while True:
        with CaptureQueriesContext(connection) as queries:
            page, cursor = letters.page(cursor, PAGE)
        assert len(queries) == 2, [q["sql"][:80] for q in queries]
        seen.extend(letter.update_id for letter in page)
        if cursor is None:
            break
    assert sorted(seen) == list(range(LETTERS))
