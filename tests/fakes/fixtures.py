"""Pytest fixtures for the fake Bot API.

Import them into a conftest.py (`from tests.fakes.fixtures import *  # noqa: F403`, or name
them). `fake_telegram` is one loopback server per test session, reset before each test;
`fake_transport` is a fresh in-process transport per test (its state is `fake_transport.fake`).
Both accept any well-formed token; `FAKE_TOKEN` is the one tests normally use.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.telegram import FAKE_TOKEN, FakeTelegram, FakeTelegramServer, FakeTelegramTransport

__all__ = ["FAKE_TOKEN", "fake_telegram", "fake_telegram_server", "fake_transport"]


@pytest.fixture(scope="session")
def fake_telegram_server() -> Iterator[FakeTelegramServer]:
    """The session's fake Bot API server; prefer `fake_telegram`, which resets it per test."""
    with FakeTelegramServer(long_poll_cap=5.0) as server:
        yield server


@pytest.fixture
def fake_telegram(fake_telegram_server: FakeTelegramServer) -> Iterator[FakeTelegramServer]:
    """The fake Bot API server with no calls, updates, faults or webhook from earlier tests.

    Point the code under test at `fake_telegram.base_url` (TELEGRAM_API_BASE_URL).
    """
    fake_telegram_server.reset()
    yield fake_telegram_server
    fake_telegram_server.reset()


@pytest.fixture
def fake_transport() -> FakeTelegramTransport:
    """A fresh in-process transport: `httpx.Client(transport=fake_transport)`, no sockets."""
    return FakeTelegramTransport(FakeTelegram())
