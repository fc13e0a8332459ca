"""The retry policy: exponential backoff with bounded jitter, a cap, a maximum, and
classification of errors into retryable and permanent."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.db import InterfaceError, OperationalError

from telegram_bot.errors import BotError, StateError, TelegramApiError


@dataclass(frozen=True)
class RetryPolicy:
    base_delay: float = 2.0
    max_delay: float = 300.0
    jitter: float = 1.0
    max_retries: int = 5
    # Checked first: these never retry, whatever else they are.
    non_retryable: tuple[type[BaseException], ...] = ()
    # These always retry (until the maximum): transient infrastructure failures.
    retryable: tuple[type[BaseException], ...] = (StateError, OperationalError, InterfaceError)

    @classmethod
    def from_settings(cls) -> RetryPolicy:
        return cls(
            base_delay=settings.JOB_RETRY_BASE_DELAY,
            max_delay=settings.JOB_RETRY_MAX_DELAY,
            jitter=settings.JOB_RETRY_JITTER,
            max_retries=settings.JOB_MAX_RETRIES,
        )


@dataclass(frozen=True)
class Decision:
    retry: bool
    delay: float
    reason: str


def backoff_delay(
    attempt: int,
    *,
    base: float,
    max_delay: float,
    jitter: float,
    rng: Callable[[], float] = random.random,
) -> float:
    """Seconds to wait after failed attempt ``attempt`` (1-based):
    ``min(max_delay, base * 2 ** (attempt - 1))`` plus a random jitter in ``[0, jitter]``."""
    if attempt < 1:
        raise ValueError("attempts start at 1")
    exponent = min(attempt - 1, 64)  # 2**64 * base is past any cap; avoids float overflow
    return min(max_delay, base * 2.0**exponent) + rng() * jitter


def decide(
    exc: BaseException,
    *,
    attempt: int,
    policy: RetryPolicy,
    rng: Callable[[], float] = random.random,
) -> Decision:
    """Whether and when to try again after ``exc`` ended attempt number ``attempt``."""
    retryable, reason = classify(exc, policy)
    if not retryable:
        return Decision(False, 0.0, reason)
    if attempt > policy.max_retries:
        return Decision(False, 0.0, f"gave up after {attempt} attempts ({reason})")
    return Decision(True, retry_delay(exc, attempt=attempt, policy=policy, rng=rng), reason)


def retry_delay(
    exc: BaseException | None,
    *,
    attempt: int = 1,
    policy: RetryPolicy | None = None,
    rng: Callable[[], float] = random.random,
) -> float:
    """Seconds to wait after attempt ``attempt`` failed with ``exc``: the policy's backoff,
    never less than Telegram's ``retry_after``. ``exc`` None: nothing failed, the attempt
    only has to come back later (another one was in flight)."""
    policy = policy or RetryPolicy.from_settings()
    delay = backoff_delay(
        attempt, base=policy.base_delay, max_delay=policy.max_delay, jitter=policy.jitter, rng=rng
    )
    retry_after = getattr(exc, "retry_after", None)
    if isinstance(retry_after, int | float) and retry_after > delay:
        delay = float(retry_after)  # flood control: never come back before Telegram allows
    return delay


def classify(exc: BaseException, policy: RetryPolicy) -> tuple[bool, str]:
    name = type(exc).__name__
    if isinstance(exc, policy.non_retryable):
        return False, f"{name} is not retryable"
    if isinstance(exc, policy.retryable):
        return True, f"{name} is transient"
    if isinstance(exc, TelegramApiError):
        code = exc.error_code or exc.status
        kind = "network error" if code is None else f"Telegram {code}"
        return exc.retryable, f"{kind} is {'retryable' if exc.retryable else 'permanent'}"
    if isinstance(exc, BotError):
        return exc.retryable, f"{name} is {'retryable' if exc.retryable else 'permanent'}"
    # An unexpected exception is a bug: retrying the same input will not fix it.
    return False, f"unexpected {name}"
