"""The core update path: a REDIS_URL redis-py would misread stops the start;
DATABASE_URL options are decoded; a slow Redis answer neither runs a command twice nor holds
the update for the claim's TTL; a Redis refusing writes is a 503; a letter whose replay was
refused runs when replayed again. Each test failed on the code before."""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from telegram_bot.errors import StateUnavailableError
from telegram_bot.pipeline import process as pipeline
from telegram_bot.pipeline.process import Outcome, process_update
from telegram_bot.pipeline.router import Route, Router
from telegram_bot.state import KVStore, override_store
from tests.builders import make_message_update
from tests.integration.slow_redis_proxy import SlowProxy
from tests.unit.config.test_settings import BASE_ENV, run_manage

REDIS_URL = os.environ.get("REDIS_URL", "")


# --- settings ---------------------------------------------------------------------------------
def test_a_redis_url_whose_database_is_not_a_number_stops_the_start() -> None:
    """REDIS_URL=redis://host:6379/db1 (a typo for /1) must not silently use database 0,
    which may be another installation's (the KV state, the cache and the task queue)."""
    result = run_manage({**BASE_ENV, "REDIS_URL": "redis://127.0.0.1:6379/db1"})
    assert result.returncode == 2, "started with a REDIS_URL whose database is 'db1'"
    assert "REDIS_URL" in result.stderr


def test_a_redis_url_with_a_malformed_option_stops_the_start() -> None:
    result = run_manage({**BASE_ENV, "REDIS_URL": "redis://127.0.0.1:6379/12?socket_timeout=2s"})
    assert result.returncode == 2, "started; every update would then fail with a ValueError"
    assert "REDIS_URL" in result.stderr


def test_database_url_options_are_percent_decoded() -> None:
    """libpq decodes a connection URI's parameters; DATABASE_URL's must mean the same."""
    from config.settings import database_from_url

    db = database_from_url(
        "postgres://u@db/name?options=-c%20statement_timeout%3D5000&application_name=tg%20cp"
    )
    assert db["OPTIONS"] == {"options": "-c statement_timeout=5000", "application_name": "tg cp"}


# --- a slow Redis -----------------------------------------------------------------------------
@pytest.fixture
def slow_redis() -> Iterator[tuple[SlowProxy, KVStore]]:
    """The test Redis behind a proxy that can hold one answer back past the store's 2 s
    socket timeout (a Redis busy with a fork or a slow command, seen from this client)."""
    if not REDIS_URL:
        pytest.skip("Redis backend: REDIS_URL not set")
    from telegram_bot.state.redis import RedisStore

    parts = urlsplit(REDIS_URL)
    proxy = SlowProxy((parts.hostname or "127.0.0.1", parts.port or 6379))
    port = proxy.port
    prefix = f"t{uuid.uuid4().hex[:12]}:"
    store = RedisStore.from_url(f"redis://127.0.0.1:{port}{parts.path}", prefix=prefix)
    try:
        yield proxy, store
    finally:
        for key in store.client.scan_iter(match=f"{prefix}*", count=500):
            store.client.delete(key)
        store.close()
        proxy.close()


def test_a_slow_answer_does_not_apply_an_increment_twice(
    slow_redis: tuple[SlowProxy, KVStore],
) -> None:
    """RedisStore._command sends a command again when the answer to it timed out on a
    connection that had served before; the first one ran, so an increment counts twice (a
    member's flood or rate window reaches its limit at half the messages)."""
    proxy, store = slow_redis
    store.increment("counter:warm", 1, ttl_ms=60_000)  # the script is known, the link used
    proxy.hold_answer_to(b"counter:slow", 2.5)
    with contextlib.suppress(StateUnavailableError):  # an honest "unavailable" is fine
        store.increment("counter:slow", 1, ttl_ms=60_000)
    time.sleep(0.8)
    assert proxy.held == 1
    assert store.get("counter:slow") == 1


handled: list[int] = []


def _ping(ctx: Any) -> None:
    handled.append(ctx.update.update_id)


@pytest.mark.django_db
def test_a_claim_whose_answer_was_slow_does_not_hold_the_update_for_the_claim_ttl(
    slow_redis: tuple[SlowProxy, KVStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The claim's answer arrives after the 2 s socket timeout: the claim was written, the
    worker does not know it, answers 503 and keeps the claim; Telegram's re-delivery (after
    Retry-After) then finds a claim of a live process and is answered 503 in_progress again,
    and again, until UPDATE_CLAIM_TTL_SECONDS (90 s) runs out: a command answered minutes
    late for one slow Redis answer."""
    proxy, store = slow_redis
    router = Router([Route.on_command("ping", _ping)])
    monkeypatch.setattr(pipeline, "get_router", lambda: router)
    handled.clear()
    with override_store(store):
        warm = make_message_update("/ping", chat_id=-100777, user_id=31337)
        assert process_update(warm) == Outcome.PROCESSED
        update = make_message_update("/ping", chat_id=-100777, user_id=31338)
        proxy.hold_answer_to(f"upd:{update['update_id']}".encode(), 2.5)
        first = process_update(update)
        assert proxy.held == 1
        assert not first.final  # a 503: Telegram comes back
        time.sleep(0.8)
        again = process_update(update)  # the re-delivery, Retry-After seconds later
    assert again == Outcome.PROCESSED, f"the re-delivery was answered {again.value}"
    assert handled == [warm["update_id"], update["update_id"]]


# --- a Redis that refuses writes --------------------------------------------------------------
@pytest.fixture
def full_redis() -> Iterator[tuple[KVStore, Any]]:
    """A private redis-server, to be made to refuse writes (maxmemory reached with the
    default noeviction policy: "OOM command not allowed"; a failed RDB save gives MISCONF, a
    failed-over primary READONLY: the same kind of answer)."""
    import redis

    from telegram_bot.state.redis import RedisStore
    from tests.redis_server import private_redis

    with private_redis() as url:
        admin = redis.Redis.from_url(url)
        store = RedisStore.from_url(url)
        try:
            yield store, admin
        finally:
            store.close()
            admin.close()


def test_a_redis_that_refuses_writes_answers_503_not_500(
    bot: Any, post_update: Any, full_redis: tuple[KVStore, Any]
) -> None:
    """ARCHITECTURE step 7: the KV store unavailable -> 503 unavailable, Retry-After 10. A
    Redis that answers but refuses writes (OOM, MISCONF after a failed save, READONLY after a
    failover) raises StateError, which nothing on the update path catches: the webhook answers
    500 without Retry-After for every update, and ``runbot``'s loop dies on the first one."""
    from telegram_bot.errors import StateError

    store, admin = full_redis
    with override_store(store):
        warm = post_update(make_message_update("/help", chat_id=5001, user_id=5001))
        assert warm.status_code == 200
        admin.config_set("maxmemory", "1")
        try:
            response = post_update(make_message_update("/help", chat_id=5002, user_id=5002))
        except StateError as exc:
            pytest.fail(f"the webhook raised {type(exc).__name__} (a 500): {exc}")
    assert response.status_code == 503
    assert response["Retry-After"] == "10"


# --- dead letters -----------------------------------------------------------------------------
fail_admin_command = {"raise": True}
admin_command_ran: list[int] = []


def _admin_command(ctx: Any) -> None:
    if fail_admin_command["raise"]:
        raise RuntimeError("a bug in the handler")
    admin_command_ran.append(ctx.update.update_id)


def test_a_letter_whose_replay_was_refused_runs_when_replayed_again(
    bot: Any, memory_store: KVStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An admin's command fails (a bug) and becomes a dead letter. The operator replays it
    while that person is not an admin (removed meanwhile): refused, and the letter stays "for
    the operator to decide" (dead_letter_views). Made an admin again, the replay is answered
    "processed" and the letter dropped, but the handler never ran: the refused replay marked
    the update DONE with no unit marker, which the next replay takes for a letter "from before
    per-unit markers whose handler committed" (legacy_done) and skips every unit."""
    from telegram_bot.admins import Role
    from telegram_bot.models import BotAdmin
    from telegram_bot.pipeline.process import dead_letters

    router = Router([Route.on_command("admincmd", _admin_command, role=Role.ADMIN)])
    monkeypatch.setattr(pipeline, "get_router", lambda: router)
    admin_command_ran.clear()
    BotAdmin.objects.create(telegram_id=7070, display_name="helper")
    update = make_message_update("/admincmd", chat_id=7070, user_id=7070)
    fail_admin_command["raise"] = True
    assert process_update(update) == Outcome.DEAD_LETTER
    fail_admin_command["raise"] = False  # the bug is fixed

    BotAdmin.objects.filter(telegram_id=7070).delete()
    letter = dead_letters().get(update["update_id"])
    assert letter is not None
    assert process_update(letter.update, replay=True) == Outcome.REFUSED  # the letter stays

    BotAdmin.objects.create(telegram_id=7070, display_name="helper")
    outcome = process_update(letter.update, replay=True)
    assert outcome == Outcome.PROCESSED
    assert admin_command_ran == [update["update_id"]], "replayed 'processed', nothing ran"
