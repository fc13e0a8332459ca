"""Ticket numbers under concurrency: gapless, unique, per bot (a locked counter row)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connections

from support import services
from support.models import Ticket, TicketCounter
from telegram_bot.pipeline.process import Outcome, process_update
from tests.fakes.telegram import FakeTelegramServer
from tests.support.helpers import message, texts

USERS = 30


@pytest.mark.django_db(transaction=True)
def test_30_concurrent_support_requests_get_numbers_1_to_30_exactly_once(
    bot: FakeTelegramServer,
) -> None:
    updates = [message(f"/support request {n}", user_id=5000 + n) for n in range(USERS)]
    outcomes: list[Outcome] = []
    errors: list[BaseException] = []
    start = threading.Barrier(USERS)

    def run(update: dict[str, Any]) -> None:
        try:
            start.wait()
            outcomes.append(process_update(update))
        except BaseException as exc:  # reported below, not lost in the thread
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(update,)) for update in updates]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors
    assert outcomes == [Outcome.PROCESSED] * USERS
    numbers = sorted(Ticket.objects.values_list("number", flat=True))
    assert numbers == list(range(1, USERS + 1))
    assert Ticket.objects.values("user_id").distinct().count() == USERS
    assert TicketCounter.objects.get().last_number == USERS
    # Each user was told their own number, exactly once.
    for ticket in Ticket.objects.all():
        [confirmation] = texts(bot, ticket.user_id)
        assert confirmation.startswith(f"Ticket #{ticket.number} opened.")


def test_a_failed_ticket_transaction_gives_its_number_back(
    bot: FakeTelegramServer, post_update: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = services._entry_create
    calls = {"n": 0}

    def failing_once(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("disk full")
        return real(*args, **kwargs)

    monkeypatch.setattr(services, "_entry_create", failing_once)
    assert post_update(message("/support first", user_id=3001))["X-Update-Outcome"] == "dead_letter"
    assert not Ticket.objects.exists()
    post_update(message("/support second", user_id=3002))
    assert list(Ticket.objects.values_list("number", "user_id")) == [(1, 3002)]


def test_numbers_are_counted_per_bot(
    bot: FakeTelegramServer, post_update: Any, settings: Any
) -> None:
    post_update(message("/support on the first bot", user_id=3001))
    settings.TELEGRAM_BOT_TOKEN = "987654321:ANOTHER-token-for-the-fake-bot-api-00000"
    post_update(message("/support on the second bot", user_id=3002))
    assert sorted(Ticket.objects.values_list("bot_id", "number")) == [
        (123456789, 1),
        (987654321, 1),
    ]
