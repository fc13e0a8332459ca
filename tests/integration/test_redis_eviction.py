"""A Redis that may evict state, or is full (issue 45 item 4).

An evicted done-marker means a re-delivered update acts twice, so ``check_production`` fails
and ``/readyz`` reports a ``maxmemory-policy`` other than ``noeviction``, and both warn above
80% of ``maxmemory``; a full Redis (noeviction refusing a write, "OOM command not allowed")
answers 503 and leaves nothing half-applied, so Telegram's re-delivery runs the update once.
Each against a private redis-server (a test never reconfigures the shared one)."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from telegram_bot.ops.production import check_results
from telegram_bot.pipeline import process as pipeline
from telegram_bot.pipeline.router import Route, Router
from telegram_bot.state import KVStore, override_store
from telegram_bot.state.redis import RedisStore
from tests.builders import make_message_update
from tests.redis_server import private_redis

CHECK = "Redis never evicts state"


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    with private_redis() as url:
        yield url


@pytest.fixture
def admin(redis_url: str) -> Iterator[redis.Redis]:
    """The private server's administrator; puts back the defaults the tests change."""
    client = redis.Redis.from_url(redis_url)
    client.flushall()
    yield client
    client.config_set("maxmemory", 0)
    client.config_set("maxmemory-policy", "noeviction")
    client.acl_deluser("limited")
    client.close()


@pytest.fixture
def store(redis_url: str, admin: redis.Redis) -> Iterator[KVStore]:
    opened = RedisStore.from_url(redis_url)
    with override_store(opened):
        yield opened
    opened.close()


def only_result(**kwargs: Any) -> Any:
    (result,) = check_results(only=[CHECK], **kwargs)
    return result


# --- check_production -------------------------------------------------------------------------
def test_a_redis_that_may_evict_fails_check_production(
    admin: redis.Redis, store: KVStore, settings: Any
) -> None:
    admin.config_set("maxmemory-policy", "allkeys-lru")
    result = only_result()
    assert result.problem is not None
    assert "allkeys-lru" in result.problem and "noeviction" in result.problem
    out = io.StringIO()
    with pytest.raises(CommandError, match="not ready for production"):
        call_command("check_production", "--only", CHECK, stdout=out)
    assert f"[FAIL] {CHECK}" in out.getvalue()


@pytest.mark.parametrize("policy", ["volatile-lru", "allkeys-random", "volatile-ttl"])
def test_every_evicting_policy_fails(admin: redis.Redis, store: KVStore, policy: str) -> None:
    admin.config_set("maxmemory-policy", policy)
    assert policy in (only_result().problem or "")


def test_noeviction_passes_and_says_so(admin: redis.Redis, store: KVStore) -> None:
    result = only_result()
    assert result.problem is None and not result.warning
    assert "noeviction" in result.detail
    out = io.StringIO()
    call_command("check_production", "--only", CHECK, stdout=out)
    assert f"[ok  ] {CHECK}" in out.getvalue()


def test_memory_above_80_percent_of_maxmemory_is_a_warning(
    admin: redis.Redis, store: KVStore
) -> None:
    used = int(admin.info("memory")["used_memory"])
    admin.config_set("maxmemory", used * 10 // 9)  # used is 90% of it
    result = only_result()
    assert result.problem is None and result.warning
    assert "maxmemory" in result.detail and "%" in result.detail
    out = io.StringIO()
    call_command("check_production", "--only", CHECK, stdout=out)  # a warning passes
    assert f"[warn] {CHECK}" in out.getvalue()


def test_a_redis_that_refuses_to_say_is_a_warning_not_a_failure(
    admin: redis.Redis, redis_url: str
) -> None:
    """Managed Redis often refuses CONFIG (and sometimes INFO): the check cannot tell."""
    admin.acl_setuser(
        "limited", enabled=True, nopass=True, keys=["*"], commands=["+@all", "-config", "-info"]
    )
    limited = RedisStore.from_url(redis_url.replace("redis://", "redis://limited:x@"))
    with override_store(limited):
        limited.set("counter:k", 1)  # it is a working store
        result = only_result()
    limited.close()
    assert result.problem is None and result.warning
    assert "could not be checked" in result.detail


# --- /readyz ----------------------------------------------------------------------------------
@pytest.mark.django_db
def test_readyz_reports_a_redis_that_may_evict(admin: redis.Redis, store: KVStore) -> None:
    admin.config_set("maxmemory-policy", "allkeys-lru")
    body = Client().get("/readyz").json()
    assert body["checks"]["kv"] == "ok"
    assert body["kv_memory"]["maxmemory_policy"] == "allkeys-lru"
    assert any("allkeys-lru" in warning for warning in body["warnings"])


@pytest.mark.django_db
def test_readyz_is_quiet_about_a_redis_that_does_not_evict(
    admin: redis.Redis, store: KVStore
) -> None:
    body = Client().get("/readyz").json()
    assert body["kv_memory"]["maxmemory_policy"] == "noeviction"
    assert "warnings" not in body


# --- a full Redis -----------------------------------------------------------------------------
def group_message(update_id: int) -> dict[str, Any]:
    update = make_message_update(
        "two words", chat_id=-100_4545, user_id=4545, chat_type="supergroup"
    )
    update["update_id"] = update_id
    return update


def test_a_full_redis_answers_503_and_writes_nothing(
    bot: Any, post_update: Any, admin: redis.Redis, store: KVStore
) -> None:
    """A group message (the one-script path) meets a Redis at its maxmemory: 503, and no key
    of it (claim, counters, markers) written; once Redis has room, the re-delivery counts it
    once."""
    assert post_update(group_message(9_000_001)).status_code == 200  # scripts known, warm
    keys_before = set(admin.keys())
    admin.config_set("maxmemory", 1)
    response = post_update(group_message(9_000_002))
    assert response.status_code == 503 and response["Retry-After"] == "10"
    assert set(admin.keys()) == keys_before
    admin.config_set("maxmemory", 0)
    again = post_update(group_message(9_000_002))
    assert again.status_code == 200 and again["X-Update-Outcome"] == "processed"
    assert post_update(group_message(9_000_002))["X-Update-Outcome"] == "duplicate"


ran: list[int] = []
fill_redis: dict[str, Any] = {}


def _fills_redis_then_writes(ctx: Any) -> None:
    """The handler of a command during which Redis fills up: its write is refused."""
    admin = fill_redis.pop("admin", None)
    if admin is not None:
        admin.config_set("maxmemory", 1)
    ctx.store.increment("counter:oom")
    ran.append(ctx.update.update_id)


def test_redis_full_while_an_update_runs_leaves_no_claim_behind(
    bot: Any,
    post_update: Any,
    admin: redis.Redis,
    store: KVStore,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The claim was written; Redis fills up before the handler's write, which is refused:
    503. Giving the claim up must work on a full Redis too, or the re-delivery finds the
    claim of a live process and is answered 503 "in progress" until the claim's TTL (90 s)."""
    router = Router([Route.on_command("oomtest", _fills_redis_then_writes)])
    monkeypatch.setattr(pipeline, "get_router", lambda: router)
    ran.clear()
    update = make_message_update("/oomtest", chat_id=4646, user_id=4646)
    fill_redis["admin"] = admin
    first = post_update(update)
    assert first.status_code == 503
    assert store.get("counter:oom") is None  # the refused write
    admin.config_set("maxmemory", 0)  # room again; Telegram re-delivers
    again = post_update(update)
    assert again.status_code == 200, f"the re-delivery was answered {again.status_code}"
    assert again["X-Update-Outcome"] == "processed"
    assert ran == [update["update_id"]]
    assert store.get("counter:oom") == 1
