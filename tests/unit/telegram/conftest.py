"""Fixtures for the Telegram client and fake Bot API tests (no Django needed)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from telegram_bot.client import TelegramClient
from tests.fakes.telegram import FAKE_TOKEN, FakeTelegramServer, FakeTelegramTransport


@pytest.fixture
def client(fake_telegram: FakeTelegramServer) -> Iterator[TelegramClient]:
    """A client talking HTTP to the session's fake server."""
    with TelegramClient(FAKE_TOKEN, fake_telegram.base_url) as telegram:
        yield telegram


@pytest.fixture
def local_client(fake_transport: FakeTelegramTransport) -> Iterator[TelegramClient]:
    """A client answered in-process by `fake_transport` (its state: `fake_transport.fake`)."""
    with TelegramClient(FAKE_TOKEN, transport=fake_transport) as telegram:
        yield telegram
