"""The answer to a button press goes in the webhook's own reply (``pipeline/reply.py``):
Telegram makes that call; everywhere else (polling, a dead letter's replay) it is made as
always, and nothing but ``answerCallbackQuery`` ever goes there."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from telegram_bot.metrics import TELEGRAM_CALLS
from telegram_bot.pipeline import reply
from telegram_bot.pipeline.process import Outcome, process_update
from tests.builders import make_callback_update, make_message_update
from tests.conftest import OWNER_ID, WEBHOOK_SECRET
from tests.fakes.telegram import FakeTelegramServer


def post(client: Client, update: dict[str, Any]) -> Any:
    """POST as Telegram does, without making the reply's call (the fixture would)."""
    return client.post(
        "/telegram/webhook",
        data=json.dumps(update),
        content_type="application/json",
        HTTP_X_TELEGRAM_BOT_API_SECRET_TOKEN=WEBHOOK_SECRET,
    )


def replies() -> float:
    return TELEGRAM_CALLS.labels("answerCallbackQuery", "webhook_reply")._value.get()


def test_a_press_is_answered_in_the_webhook_reply(bot: FakeTelegramServer, client: Client) -> None:
    post(client, make_message_update("/panel", chat_id=OWNER_ID, user_id=OWNER_ID))
    bot.reset()
    before = replies()
    press = make_callback_update("panel:home", user_id=OWNER_ID, message_id=1)
    response = post(client, press)
    assert response.status_code == 200
    assert response["X-Update-Outcome"] == "processed"
    assert response.json() == {
        "method": "answerCallbackQuery",
        "callback_query_id": press["callback_query"]["id"],
    }
    # The product did not make the call itself, and counted it as a reply.
    assert [call.method for call in bot.calls] == ["editMessageText"]
    assert replies() == before + 1


def test_a_refused_press_carries_its_alert_in_the_reply(
    bot: FakeTelegramServer, client: Client
) -> None:
    press = make_callback_update("panel:adm_rm:abc", user_id=OWNER_ID)
    response = post(client, press)
    assert response.json() == {
        "method": "answerCallbackQuery",
        "callback_query_id": press["callback_query"]["id"],
        "text": "This button is not valid.",
        "show_alert": True,
    }
    assert bot.calls_to("answerCallbackQuery") == []


def test_a_press_from_someone_refused_by_the_security_step_is_told_in_the_reply(
    bot: FakeTelegramServer, client: Client
) -> None:
    press = make_callback_update("panel:admins", user_id=4242)  # not an admin
    response = post(client, press)
    body = response.json()
    assert body["method"] == "answerCallbackQuery"
    assert body["show_alert"] is True
    assert body["text"]
    assert bot.calls_to("answerCallbackQuery") == []


def test_the_fake_makes_the_reply_as_telegram_does(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    post_update(make_message_update("/panel", chat_id=OWNER_ID, user_id=OWNER_ID))
    post_update(make_callback_update("panel:home", user_id=OWNER_ID, message_id=1))
    (answer,) = bot.calls_to("answerCallbackQuery")
    assert not answer.failed


def test_a_message_is_answered_with_the_outcome_not_a_call(
    bot: FakeTelegramServer, client: Client
) -> None:
    response = post(client, make_message_update("/start", chat_id=5, user_id=5))
    assert response.json() == {"ok": True, "outcome": "processed"}
    assert response["X-Update-Outcome"] == "processed"
    assert len(bot.calls_to("sendMessage")) == 1


def test_outside_the_webhook_the_press_is_answered_by_a_call(bot: FakeTelegramServer) -> None:
    """Polling and a dead letter's replay pass the pipeline without the webhook's slot."""
    press = make_callback_update("panel:home", user_id=OWNER_ID, message_id=1)
    assert process_update(press) == Outcome.PROCESSED
    assert len(bot.calls_to("answerCallbackQuery")) == 1


def test_a_duplicate_carries_no_call(bot: FakeTelegramServer, client: Client) -> None:
    press = make_callback_update("panel:home", user_id=OWNER_ID, message_id=1)
    assert post(client, press).json()["method"] == "answerCallbackQuery"
    again = post(client, press)
    assert again.json() == {"ok": True, "outcome": "duplicate"}


@pytest.mark.parametrize(
    ("update_id", "method", "taken"),
    [
        (7, "answerCallbackQuery", True),
        (8, "answerCallbackQuery", False),
        (7, "sendMessage", False),
    ],
)
def test_one_call_of_the_slots_own_update_and_of_the_methods_allowed(
    update_id: int, method: str, taken: bool
) -> None:
    with reply.webhook_reply(7) as slot:
        assert reply.offer(update_id, method, {"x": 1}) is taken
        assert reply.offer(7, "answerCallbackQuery", {"x": 2}) is not taken  # one call at most
    assert slot.call == (
        {"method": method, "x": 1} if taken else {"method": "answerCallbackQuery", "x": 2}
    )
    assert reply.offer(7, "answerCallbackQuery", {}) is False  # the slot is closed


def test_the_fake_refuses_what_telegram_does_not_make_from_a_reply(
    bot: FakeTelegramServer, settings: Any
) -> None:
    token = settings.TELEGRAM_BOT_TOKEN
    for body in (b'{"method": "getMe"}', b'{"method": "deleteWebhook"}', b'{"ok": true}', b"[]"):
        bot.webhook_reply(token, body)
    assert bot.calls == []


@pytest.mark.django_db(transaction=True)
def test_presses_served_at_once_each_carry_their_own_answer(
    live_bot: FakeTelegramServer, live_server: Any
) -> None:
    """Real concurrent requests on the threaded server: each request's slot holds its own
    press's answer, never another's."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    presses = [make_callback_update("panel:adm_rm:abc", user_id=OWNER_ID) for _ in range(8)]
    start = threading.Barrier(len(presses))

    def press(update: dict[str, Any]) -> tuple[str, Any]:
        start.wait()
        response = httpx.post(
            f"{live_server.url}/telegram/webhook",
            json=update,
            headers={"X-Telegram-Bot-Api-Secret-Token": WEBHOOK_SECRET},
            timeout=30,
        )
        assert response.headers["X-Update-Outcome"] == "processed"
        return update["callback_query"]["id"], response.json()

    with ThreadPoolExecutor(len(presses)) as pool:
        answers = list(pool.map(press, presses))
    for query_id, body in answers:
        assert body["method"] == "answerCallbackQuery"
        assert body["callback_query_id"] == query_id
    assert live_bot.calls_to("answerCallbackQuery") == []
