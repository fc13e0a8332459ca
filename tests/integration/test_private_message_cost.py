"""A private message clears its sender's BlockedChat row with one statement (its value bound),
as the webhook runs it (outside any transaction): on PostgreSQL one round trip, and Django's
health check once a request; a pooled connection that died is replaced by that check and the
row still goes. Counts, never times."""

from __future__ import annotations

from typing import Any

import django
import psycopg
import pytest
from django.db import connection

from telegram_bot.models import BlockedChat
from tests.builders import make_message_update
from tests.stats.test_live_writer_round_trips import RoundTrips, health_checks, new_request

pytestmark = [
    pytest.mark.skipif(connection.vendor != "postgresql", reason="counts psycopg's round trips"),
    pytest.mark.django_db(transaction=True),
]
__all__ = ["health_checks"]  # the fixture, used by name below
USER = 5_550_001


def start(post_update: Any, user_id: int) -> None:
    response = post_update(make_message_update("/start", chat_id=user_id, user_id=user_id))
    assert response["X-Update-Outcome"] == "processed"


def test_a_start_costs_two_statements_and_the_health_check(
    live_bot: Any, post_update: Any, health_checks: None
) -> None:
    start(post_update, USER + 1)  # the connection, caches
    BlockedChat.objects.create(chat_id=USER, reason="blocked")
    new_request()  # Django checks a reused connection once a request
    with RoundTrips() as trips:
        start(post_update, USER)
    # The unblocking DELETE, and the subscriber's upsert (broadcasts: /start subscribes).
    assert trips.sql == ["DELETE", "INSERT"]
    # The health check's SELECT 1, the DELETE and the upsert; Django 5.2 also wraps
    # bulk_create's one batch in a transaction of its own (three round trips more), 6.x not.
    assert trips.waits == (3 if django.VERSION >= (6, 0) else 6)
    assert not BlockedChat.objects.filter(chat_id=USER).exists()
    assert len(live_bot.calls_to("sendMessage")) == 2


def test_a_connection_that_died_in_the_pool_is_replaced_and_the_row_still_goes(
    live_bot: Any, post_update: Any, health_checks: None
) -> None:
    start(post_update, USER + 1)
    BlockedChat.objects.create(chat_id=USER, reason="blocked")
    pid = connection.connection.info.backend_pid
    with psycopg.connect(**connection.get_connection_params(), autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])
    new_request()
    start(post_update, USER)
    assert connection.connection.info.backend_pid != pid
    assert not BlockedChat.objects.filter(chat_id=USER).exists()
