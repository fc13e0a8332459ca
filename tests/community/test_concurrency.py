"""Two admins pressing Approve at the same moment: one decision, one API call, every copy
edited. Run on each KV backend the bot can use (Redis only when REDIS_URL is set)."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connections

from telegram_bot.models import BotAdmin
from telegram_bot.pipeline.process import Outcome, process_update
from telegram_bot.state import KVStore, override_store
from tests.builders import make_join_request_update
from tests.community.helpers import alerts, button_data, copy_of, edits_to, notifications
from tests.community.helpers import press_update as press
from tests.conftest import OWNER_ID, make_store
from tests.fakes.telegram import FakeTelegramServer

WHEN = r"\d{4}-\d\d-\d\d \d\d:\d\d UTC"


@pytest.fixture(params=["memory", "db", "redis"])
def store(
    request: pytest.FixtureRequest, bot: FakeTelegramServer, monkeypatch: pytest.MonkeyPatch
) -> Iterator[KVStore]:
    for shared in make_store(request, request.param):

        def slow_read(key: str, read: Any = shared.get) -> Any:
            # Both presses read the pending record before either writes: a read-then-write
            # decision would then call Telegram twice; only a compare-and-set survives this.
            value = read(key)
            if key.startswith("jr:r:"):
                time.sleep(0.05)
            return value

        monkeypatch.setattr(shared, "get", slow_read)
        with override_store(shared):
            yield shared


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(60)
def test_it_makes_one_api_call_when_two_admins_press_approve_at_once(
    bot: FakeTelegramServer, store: KVStore
) -> None:
    BotAdmin.objects.create(telegram_id=11)
    assert process_update(make_join_request_update(user_id=2002, chat_id=-100555)) == (
        Outcome.PROCESSED
    )
    data = button_data(notifications(bot)[0])["Approve"]
    presses = {
        "Olga": press(data, user_id=OWNER_ID, name="Olga", message_id=copy_of(data, OWNER_ID)),
        "Ivan": press(data, user_id=11, name="Ivan", message_id=copy_of(data, 11)),
    }
    # A slow Telegram keeps the winner inside its call while the other press arrives.
    bot.delay_next("approveChatJoinRequest", 0.2)
    barrier = threading.Barrier(2)
    outcomes: dict[str, Outcome] = {}

    def work(name: str) -> None:
        try:
            barrier.wait()
            outcomes[name] = process_update(presses[name])
        finally:
            connections.close_all()

    threads = [threading.Thread(target=work, args=(name,)) for name in presses]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert outcomes == {"Olga": Outcome.PROCESSED, "Ivan": Outcome.PROCESSED}
    [approve] = bot.calls_to("approveChatJoinRequest")
    assert approve.params == {"chat_id": -100555, "user_id": 2002} and not approve.failed
    [alert] = alerts(bot)
    match = re.fullmatch(
        rf"Already decided by (Olga|Ivan) at {WHEN}: (approved|approve, in progress)\.", alert
    )
    assert match is not None, alert
    winner = match[1]
    for admin_id in (OWNER_ID, 11):
        [edit] = edits_to(bot, admin_id)
        assert re.search(rf"Approved by {winner} at {WHEN}\.$", edit.params["text"])
        assert "reply_markup" not in edit.params
    assert len(bot.calls_to("answerCallbackQuery")) == 2
