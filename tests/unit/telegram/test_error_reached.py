"""TelegramApiError.reached: did a failed call possibly reach Telegram? Senders rely on it to
never resend a message that may already be out."""

from __future__ import annotations

import time

import httpx
import pytest

from telegram_bot.client import TelegramClient, telegram_error
from telegram_bot.errors import TelegramApiError
from tests.fakes.telegram import FAKE_TOKEN, FakeTelegramServer


@pytest.mark.parametrize(
    ("cause", "reached"),
    [
        (httpx.ConnectError("refused"), False),
        (httpx.ConnectTimeout("slow connect"), False),
        (httpx.PoolTimeout("no connection free"), False),
        (httpx.ReadTimeout("no answer"), None),
        (httpx.RemoteProtocolError("dropped"), None),
    ],
)
def test_network_failures_say_whether_the_request_left(
    cause: Exception, reached: bool | None
) -> None:
    assert telegram_error("sendMessage", cause=cause).reached is reached


def test_answers_and_gateway_errors() -> None:
    answered = {"ok": False, "error_code": 400, "description": "Bad Request: chat not found"}
    assert telegram_error("sendMessage", status=400, payload=answered).reached is True
    assert telegram_error("sendMessage", status=504).reached is None  # a proxy gave up waiting
    assert telegram_error("sendMessage", status=500).reached is True
    # A 200 that cannot be read (`ok: true` without `result`, a page) was processed: unknown.
    assert telegram_error("sendMessage", status=200).reached is None


def test_a_real_read_timeout_is_unknown_and_the_message_did_arrive(
    fake_telegram: FakeTelegramServer,
) -> None:
    fake_telegram.delay_next("sendMessage", 1.0)
    timeout = httpx.Timeout(connect=2.0, read=0.2, write=2.0, pool=2.0)
    with (
        TelegramClient(FAKE_TOKEN, fake_telegram.base_url, timeout=timeout) as client,
        pytest.raises(TelegramApiError) as caught,
    ):
        client.send_message(chat_id=5, text="hello")
    assert caught.value.reached is None
    time.sleep(1.2)
    assert [c.params["text"] for c in fake_telegram.calls_to("sendMessage")] == ["hello"]
