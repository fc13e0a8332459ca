"""The live writer's synchronous cost on PostgreSQL as the webhook runs it (outside any
``atomic`` block, without the write-behind): two statements a message on Django's connection
(``BEGIN`` + lock + add, then ``COMMIT``), their values bound by psycopg, plus Django's own
health check once a request; and the same outcomes as the ``atomic`` path when the KV commit
is a duplicate, raises, or the connection died while it sat in the pool. Counts, never
times."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from typing import Any

import psycopg
import pytest
from django.db import OperationalError, close_old_connections, connection, transaction
from psycopg.pq import TransactionStatus

from stats import daylock, keys
from stats.live_writer import RowDelta, count_once
from stats.models import DailyCoverage, DailyUserStat
from telegram_bot.state import KVStore, open_store, override_store
from tests.builders import make_message_update
from tests.conftest import REDIS_URL

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the two-round-trip path is PostgreSQL's"
)
CHAT = -100778
DAY = datetime.now(UTC).date() - timedelta(days=1)


@pytest.fixture(autouse=True)
def _synchronous_adds(settings: Any) -> None:
    """The synchronous path: each message's add before its answer (``STATS_WRITE_BEHIND_MS``
    0, and a day the write-behind's epoch cannot lock; tests/stats/test_write_behind.py has
    the epochs)."""
    settings.STATS_WRITE_BEHIND_MS = 0


@pytest.fixture
def memory() -> KVStore:
    return open_store("memory://")


@pytest.fixture
def health_checks() -> Iterator[None]:
    """Health checks on, as the product's settings have them (the tests' settings may not)."""
    saved = connection.health_check_enabled
    connection.health_check_enabled = True
    yield
    connection.health_check_enabled = saved


class RoundTrips:
    """Every round trip to the server (each wait of psycopg for it: Django's health check
    included) and every statement sent through Django's cursors (``execute_wrapper``): its
    first word, its SQL and its parameters."""

    def __init__(self) -> None:
        self.waits = 0
        self.sql: list[str] = []
        self.full: list[str] = []
        self.params: list[Any] = []

    def __enter__(self) -> RoundTrips:
        self.original = psycopg.Connection.wait
        original = self.original

        def wait(conn: Any, *args: Any, **kwargs: Any) -> Any:
            self.waits += 1
            return original(conn, *args, **kwargs)

        psycopg.Connection.wait = wait  # type: ignore[method-assign]
        self.wrapper = connection.execute_wrapper(self._record)
        self.wrapper.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wrapper.__exit__(None, None, None)
        psycopg.Connection.wait = self.original  # type: ignore[method-assign]

    def _record(self, execute: Any, sql: str, params: Any, many: bool, ctx: Any) -> Any:
        self.sql.append(sql.split(";")[0].split()[0])
        self.full.append(sql)
        self.params.append(params)
        return execute(sql, params, many, ctx)


def new_request() -> None:
    """What Django does when a request starts (the test client leaves it out): a reused
    connection is health-checked again before its first query."""
    close_old_connections()


def delta(user_id: int = 1, day: date = DAY) -> RowDelta:
    return RowDelta(CHAT, day, user_id, {"message_count": 1, "word_count": 2, "hour_13": 1})


def idle() -> bool:
    raw = connection.connection
    return raw is not None and raw.info.transaction_status == TransactionStatus.IDLE


def cell(user_id: int = 1) -> int:
    return DailyUserStat.objects.get(chat_id=CHAT, day=DAY, user_id=user_id).message_count


@pytest.mark.django_db(transaction=True)
def test_a_counted_message_costs_two_statements_with_their_values_bound(
    memory: KVStore, health_checks: None
) -> None:
    assert count_once(store=memory, commit=lambda: True, rows=[delta(1)])  # connects, memo
    with RoundTrips() as trips:
        assert count_once(store=memory, commit=lambda: True, rows=[delta(2)])
    assert trips.waits == 2  # no separate BEGIN
    assert trips.sql == ["BEGIN", "COMMIT"]
    # Bound by psycopg (Django's client-side binding cursor), not written into the SQL.
    assert "%s" in trips.full[0] and str(CHAT) not in trips.full[0]
    assert CHAT in trips.params[0] and DAY in trips.params[0]
    assert cell(2) == 1 and idle()
    # In a new request Django first checks the reused connection (CONN_HEALTH_CHECKS): one
    # round trip more, and still the two statements.
    new_request()
    with RoundTrips() as trips:
        assert count_once(store=memory, commit=lambda: True, rows=[delta(3)])
    assert trips.waits == 3 and trips.sql == ["BEGIN", "COMMIT"]
    assert cell(3) == 1 and idle()


@pytest.mark.django_db(transaction=True)
def test_the_live_writers_commit_does_not_wait_for_the_disk(memory: KVStore) -> None:
    """Its adds are derived data: a database crash that loses the last of them leaves KV-only
    increments, as a writer killed between its two writes does (stats README, Ordering)."""
    seen: list[str] = []

    def commit() -> bool:
        with connection.cursor() as cursor:  # inside the writer's transaction
            cursor.execute("SHOW synchronous_commit")
            seen.append(cursor.fetchone()[0])
        return True

    with RoundTrips() as trips:
        assert count_once(store=memory, commit=commit, rows=[delta()])
    assert "SET LOCAL synchronous_commit TO OFF" in trips.full[0]
    assert seen == ["off"]
    with connection.cursor() as cursor:  # SET LOCAL: only that transaction
        cursor.execute("SHOW synchronous_commit")
        assert cursor.fetchone()[0] == "on"


@pytest.mark.django_db(transaction=True)
def test_the_first_message_of_a_day_writes_coverage_in_the_same_round_trip(
    memory: KVStore,
) -> None:
    count_once(store=memory, commit=lambda: True, rows=[delta(1, DAY - timedelta(days=1))])
    with RoundTrips() as trips:
        assert count_once(store=memory, commit=lambda: True, rows=[delta(1)])
    assert trips.waits == 2
    assert DailyCoverage.objects.get(chat_id=CHAT, day=DAY, category="messages").status == "live"


@pytest.mark.django_db(transaction=True)
def test_a_duplicate_rolls_the_add_back_in_the_second_round_trip(memory: KVStore) -> None:
    assert count_once(store=memory, commit=lambda: True, rows=[delta()])
    with RoundTrips() as trips:
        assert not count_once(store=memory, commit=lambda: False, rows=[delta()])
    assert trips.sql == ["BEGIN", "ROLLBACK"] and trips.waits == 2
    assert cell() == 1 and idle()


@pytest.mark.django_db(transaction=True)
def test_a_commit_that_raises_rolls_back_and_leaves_no_transaction_open(memory: KVStore) -> None:
    def broken() -> bool:
        raise RuntimeError("KV store down")

    with pytest.raises(RuntimeError):
        count_once(store=memory, commit=broken, rows=[delta()])
    assert idle()
    assert not DailyUserStat.objects.exists()
    assert count_once(store=memory, commit=lambda: True, rows=[delta()])
    assert cell() == 1


@pytest.mark.django_db(transaction=True)
def test_anything_raised_before_the_commit_leaves_no_transaction_open(memory: KVStore) -> None:
    """As a process that dies there: the increment stays in the KV store only, and the next
    message on this connection does not run inside a forgotten transaction."""

    def interrupted(execute: Any, sql: str, params: Any, many: bool, ctx: Any) -> Any:
        if sql == "COMMIT":
            raise SystemExit("worker timeout")
        return execute(sql, params, many, ctx)

    with connection.execute_wrapper(interrupted), pytest.raises(SystemExit):
        count_once(store=memory, commit=lambda: True, rows=[delta(1)])
    assert idle()
    assert count_once(store=memory, commit=lambda: True, rows=[delta(2)])
    assert cell(2) == 1
    assert not DailyUserStat.objects.filter(user_id=1).exists()


@pytest.mark.django_db(transaction=True)
def test_a_connection_that_died_in_the_pool_is_replaced_without_losing_the_add(
    memory: KVStore, health_checks: None
) -> None:
    """Django's health check, at the start of the next request, finds it dead and connects
    again before the add."""
    assert count_once(store=memory, commit=lambda: True, rows=[delta()])
    pid = connection.connection.info.backend_pid
    with psycopg.connect(**connection.get_connection_params(), autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])
    new_request()
    commits: list[int] = []
    assert count_once(store=memory, commit=lambda: commits.append(1) or True, rows=[delta()])
    assert commits == [1] and cell() == 2
    assert connection.connection.info.backend_pid != pid
    assert DailyCoverage.objects.filter(chat_id=CHAT, poisoned_at__isnull=False).count() == 0


@pytest.mark.django_db(transaction=True)
def test_a_failed_add_outside_a_transaction_counts_in_the_kv_store_and_poisons(
    memory: KVStore,
) -> None:
    def fail(execute: Any, sql: str, params: Any, many: bool, ctx: Any) -> Any:
        if sql.startswith("BEGIN"):
            raise OperationalError("canceling statement due to statement timeout")
        return execute(sql, params, many, ctx)

    commits: list[int] = []
    with connection.execute_wrapper(fail):
        applied = count_once(store=memory, commit=lambda: commits.append(1) or True, rows=[delta()])
    assert applied and commits == [1] and idle()
    assert not DailyUserStat.objects.exists()
    assert memory.get(keys.poison_key(CHAT, DAY, "messages")) is not None


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("path", ["own transaction", "atomic"])
def test_the_smallest_day_lock_key_is_bound_and_taken(
    memory: KVStore, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    """A day's lock key may be -2**63: bound client-side it is written ``-9223372036854775808``,
    which a cast would apply to before the minus (out of range) without the parentheses."""
    monkeypatch.setattr(daylock, "day_lock_key", lambda chat_id, day: -(2**63))
    if path == "atomic":
        with transaction.atomic():
            assert count_once(store=memory, commit=lambda: True, rows=[delta()])
    else:
        assert count_once(store=memory, commit=lambda: True, rows=[delta()])
    assert cell() == 1
    assert not DailyCoverage.objects.filter(chat_id=CHAT, poisoned_at__isnull=False).exists()


# --- the whole webhook path --------------------------------------------------------------------
@pytest.mark.django_db(transaction=True)
def test_a_group_message_through_the_webhook_costs_two_database_statements(
    live_bot: Any, post_update: Any, health_checks: None
) -> None:
    """BEGIN + lock + add, then COMMIT, and nothing else; and the health check the served
    settings make once a request on a pooled connection (``SELECT 1``)."""
    for user_id in (1, 2):  # connections, caches, the coverage memo
        assert post_update(group_message(user_id)).status_code == 200
    new_request()
    with RoundTrips() as trips:
        assert post_update(group_message(3)).status_code == 200
    assert trips.sql == ["BEGIN", "COMMIT"]
    assert trips.waits == 3
    assert DailyUserStat.objects.filter(chat_id=CHAT).count() == 3


@pytest.mark.django_db(transaction=True)
def test_a_group_message_through_the_webhook_costs_one_redis_round_trip(
    live_bot: Any, post_update: Any
) -> None:
    """The anti-flood counter, the commit of the statistics' counters and the done-marker in
    one script (``KVStore.claim_or_finish``), sent through the store's redis-py client (no
    connection of its own beside it); nothing else."""
    if not REDIS_URL:
        pytest.skip("REDIS_URL not set")
    store = open_store(REDIS_URL, prefix=f"t{uuid.uuid4().hex[:12]}:")
    client = store.client  # type: ignore[attr-defined]
    commands: list[str] = []
    send = client.execute_command

    def count(*args: Any, **options: Any) -> Any:
        commands.append(str(args[0]))
        return send(*args, **options)

    try:
        with override_store(store):
            assert post_update(group_message(1)).status_code == 200
            client.execute_command = count
            assert post_update(group_message(2)).status_code == 200
            client.execute_command = send
            flood = [key for key in store.scan_all("mod:fl:") if f":{CHAT}:2:" in key]
            assert [store.get(key) for key in flood] == [1]  # counted with the claim
    finally:
        client.execute_command = send
        for key in client.scan_iter(match=f"{store.prefix}*", count=500):
            client.delete(key)
        store.close()
    assert commands == ["EVALSHA"]
    assert DailyUserStat.objects.filter(chat_id=CHAT).count() == 2


def group_message(user_id: int) -> dict[str, Any]:
    return make_message_update(
        "two words", chat_id=CHAT, user_id=user_id, chat_type="supergroup", date=int(time.time())
    )
