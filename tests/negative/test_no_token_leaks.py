"""The bot token never reaches a log line or an exception text."""

from __future__ import annotations

import io
import logging
from typing import Any

import pytest

from telegram_bot.client import TelegramClient
from telegram_bot.errors import TelegramApiError
from tests.builders import make_message_update
from tests.fakes.telegram import FakeTelegramServer


@pytest.fixture
def console_output() -> Any:
    """The output of the configured console handler (with its filters), captured."""
    handler = next(
        h
        for h in logging.getLogger().handlers
        if isinstance(h, logging.StreamHandler) and h.filters
    )
    stream = io.StringIO()
    previous = handler.setStream(stream)
    yield stream
    handler.setStream(previous)


def test_log_lines_are_scrubbed_by_the_configured_handler(
    console_output: io.StringIO, settings: Any
) -> None:
    token = settings.TELEGRAM_BOT_TOKEN
    log = logging.getLogger("telegram_bot.test")
    log.error("calling https://api.telegram.org/bot%s/getMe", token)
    try:
        raise RuntimeError(f"failed with {token}")
    except RuntimeError:
        log.exception("with traceback")
    text = console_output.getvalue()
    assert "getMe" in text and "with traceback" in text
    assert token not in text


def test_a_failing_update_logs_no_token(
    bot: FakeTelegramServer, post_update: Any, console_output: io.StringIO, settings: Any
) -> None:
    bot.fail_next("sendMessage", status=500, description=f"boom {settings.TELEGRAM_BOT_TOKEN}")
    post_update(make_message_update("/start", chat_id=5, user_id=5))
    text = console_output.getvalue()
    assert "handler failed" in text
    assert settings.TELEGRAM_BOT_TOKEN not in text


def test_client_errors_carry_no_token(fake_telegram: FakeTelegramServer, settings: Any) -> None:
    token = settings.TELEGRAM_BOT_TOKEN
    fake_telegram.fail_next("getMe", status=502, description="Bad Gateway")
    with TelegramClient(token, fake_telegram.base_url) as client:
        with pytest.raises(TelegramApiError) as caught:
            client.get_me()
        assert token not in str(caught.value) and token not in repr(client)
    with TelegramClient(token, "http://127.0.0.1:1") as client:  # connection refused
        with pytest.raises(TelegramApiError) as caught:
            client.get_me()
        assert caught.value.retryable
        assert token not in str(caught.value)
        assert token not in repr(caught.value.__cause__ or "")
