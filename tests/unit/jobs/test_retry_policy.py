"""The backoff function and error classification (hypothesis for the arithmetic)."""

from __future__ import annotations

import httpx
import pytest
from django.db import OperationalError
from hypothesis import given
from hypothesis import strategies as st

from telegram_bot.errors import (
    StateUnavailableError,
    TelegramApiError,
    TelegramRateLimitError,
    ValidationError,
    WorkflowError,
)
from telegram_bot.jobs.retry import RetryPolicy, backoff_delay, decide

delays = st.floats(min_value=0.001, max_value=10_000, allow_nan=False)


@given(
    attempt=st.integers(min_value=1, max_value=200),
    base=delays,
    cap=delays,
    jitter=st.floats(min_value=0, max_value=100),
    draw=st.floats(min_value=0, max_value=1),
)
def test_every_delay_lies_in_its_bounds(
    attempt: int, base: float, cap: float, jitter: float, draw: float
) -> None:
    delay = backoff_delay(attempt, base=base, max_delay=cap, jitter=jitter, rng=lambda: draw)
    floor = min(cap, base * 2.0 ** (attempt - 1))
    assert floor <= delay <= floor + jitter + 1e-9
    assert delay <= cap + jitter + 1e-9


@given(attempt=st.integers(min_value=1, max_value=30), base=delays)
def test_delays_grow_until_the_cap(attempt: int, base: float) -> None:
    cap = base * 1000
    first = backoff_delay(attempt, base=base, max_delay=cap, jitter=0)
    second = backoff_delay(attempt + 1, base=base, max_delay=cap, jitter=0)
    assert second >= first
    assert second == cap or second == pytest.approx(2 * first)


@given(max_retries=st.integers(min_value=0, max_value=20))
def test_attempts_stop_at_the_maximum(max_retries: int) -> None:
    policy = RetryPolicy(base_delay=1, max_delay=10, jitter=0, max_retries=max_retries)
    error = TelegramApiError("sendMessage", status=500, error_code=500)
    decisions = [decide(error, attempt=n, policy=policy).retry for n in range(1, max_retries + 3)]
    assert decisions == [True] * max_retries + [False, False]


def test_backoff_refuses_attempt_zero() -> None:
    with pytest.raises(ValueError, match="attempts start at 1"):
        backoff_delay(0, base=1, max_delay=1, jitter=0)


POLICY = RetryPolicy(base_delay=1, max_delay=60, jitter=0, max_retries=5)


@pytest.mark.parametrize(
    ("error", "retry"),
    [
        (TelegramApiError("sendMessage", status=500, error_code=500), True),
        (TelegramApiError("sendMessage", status=502, error_code=502), True),
        (TelegramApiError("sendMessage", status=None), True),  # network error / timeout
        (TelegramRateLimitError("sendMessage", retry_after=3), True),
        (
            TelegramApiError("sendMessage", status=400, error_code=400, description="Bad Request"),
            False,
        ),
        (TelegramApiError("sendMessage", status=403, error_code=403, description="blocked"), False),
        (ValidationError("too long"), False),
        (WorkflowError("expired"), False),
        (StateUnavailableError("redis down"), True),
        (OperationalError("database is locked"), True),
        (KeyError("bug"), False),
        (httpx.ConnectError("raw httpx should not happen"), False),
    ],
)
def test_errors_are_classified(error: BaseException, retry: bool) -> None:
    assert decide(error, attempt=1, policy=POLICY).retry is retry


def test_a_429_waits_at_least_retry_after() -> None:
    decision = decide(
        TelegramRateLimitError("sendMessage", retry_after=30), attempt=1, policy=POLICY
    )
    assert decision.retry
    assert decision.delay >= 30


def test_non_retryable_classes_override() -> None:
    policy = RetryPolicy(non_retryable=(StateUnavailableError,))
    assert decide(StateUnavailableError("x"), attempt=1, policy=policy).retry is False
