from __future__ import annotations

import pytest

from telegram_bot import errors
from telegram_bot.client import telegram_error
from telegram_bot.errors import (
    BotError,
    RateLimitError,
    StateError,
    StateUnavailableError,
    TelegramApiError,
    TelegramRateLimitError,
)

ALL_CLASSES: list[type[BotError]] = [
    errors.AuthenticationError,
    errors.AuthorizationError,
    errors.ValidationError,
    errors.RateLimitError,
    errors.TelegramApiError,
    errors.StateError,
    errors.WorkflowError,
    errors.SchedulerError,
    errors.InternalError,
]
RETRYABLE = {errors.RateLimitError, errors.StateError}


@pytest.mark.parametrize("cls", ALL_CLASSES)
def test_every_error_class_says_whether_it_is_retryable(cls: type[BotError]) -> None:
    assert issubclass(cls, BotError)
    assert cls.retryable is (cls in RETRYABLE)
    assert cls.code
    assert 0 < len(cls.user_message) <= 80


def test_error_codes_are_distinct() -> None:
    codes = [cls.code for cls in ALL_CLASSES]
    assert len(set(codes)) == len(codes)


def test_permanent_is_the_negation_of_retryable() -> None:
    assert errors.ValidationError("bad").permanent
    assert not StateError("down").permanent


def test_a_user_message_can_be_given_per_instance() -> None:
    error = errors.WorkflowError("step 3 expired", user_message="Start again with /ticket.")
    assert error.user_message == "Start again with /ticket."
    assert str(error) == "step 3 expired"


def test_state_errors_take_a_plain_message_and_are_retryable() -> None:
    error = StateUnavailableError("redis at kv:6379 unreachable")
    assert isinstance(error, StateError)
    assert str(error) == "redis at kv:6379 unreachable"
    assert error.retryable
    assert error.code == "state_unavailable"


@pytest.mark.parametrize(
    ("status", "retryable"),
    [
        (None, True),
        (429, True),
        (500, True),
        (502, True),
        (503, True),
        (400, False),
        (401, False),
        (403, False),
        (404, False),
        (409, False),
    ],
)
def test_telegram_errors_are_retryable_by_status(status: int | None, retryable: bool) -> None:
    assert TelegramApiError("sendMessage", status=status, error_code=status).retryable is retryable


def test_telegram_error_message_names_the_method_and_status() -> None:
    error = TelegramApiError("sendMessage", status=400, error_code=400, description="Bad Request")
    assert str(error) == "Telegram sendMessage failed: 400 Bad Request"
    assert error.method == "sendMessage"


def test_a_telegram_rate_limit_is_both_a_rate_limit_and_a_telegram_error() -> None:
    error = TelegramRateLimitError("sendMessage", retry_after=3)
    assert isinstance(error, RateLimitError)
    assert isinstance(error, TelegramApiError)
    assert error.retry_after == 3.0
    assert isinstance(error.retry_after, float)
    assert error.retryable
    assert error.user_message == RateLimitError.user_message


@pytest.mark.parametrize(
    ("status", "description", "unreachable"),
    [
        (403, "Forbidden: bot was blocked by the user", True),
        (400, "Bad Request: chat not found", True),
        (400, "Bad Request: message text is empty", False),
        (500, "Internal Server Error", False),
    ],
)
def test_chat_unreachable_marks_chats_to_skip(
    status: int, description: str, unreachable: bool
) -> None:
    error = TelegramApiError("sendMessage", status=status, description=description)
    assert error.chat_unreachable is unreachable


def test_the_mapping_keeps_retry_after_and_migrate_to_chat_id() -> None:
    payload = {
        "ok": False,
        "error_code": 400,
        "description": "Bad Request: group chat was upgraded to a supergroup chat",
        "parameters": {"migrate_to_chat_id": -1001234567890, "retry_after": 5},
    }
    error = telegram_error("sendMessage", status=400, payload=payload)
    assert type(error) is TelegramApiError
    assert error.migrate_to_chat_id == -1001234567890
    assert error.retry_after == 5.0
    assert error.permanent


def test_the_mapping_prefers_error_code_to_the_http_status() -> None:
    payload = {"ok": False, "error_code": 429, "description": "Too Many Requests"}
    error = telegram_error("sendMessage", status=200, payload=payload)
    assert isinstance(error, TelegramRateLimitError)
    assert error.retry_after == 1.0  # Telegram always sends one; 1 s when it is missing


def test_the_mapping_ignores_malformed_parameters() -> None:
    payload = {"ok": False, "error_code": 400, "parameters": {"retry_after": "soon"}}
    error = telegram_error("sendMessage", status=400, payload=payload)
    assert error.retry_after is None
    assert error.description == ""


@pytest.mark.parametrize(
    ("sent", "kept"),
    [
        (7, 7.0),
        (2.5, 2.5),
        (10**12, 86400.0),
        (10**400, 86400.0),
        (float("inf"), 86400.0),
        (float("nan"), 1.0),
        (-5, 1.0),
        ("30", 1.0),
        (True, 1.0),
    ],
)
def test_retry_after_is_kept_within_a_day(sent: object, kept: float) -> None:
    """A broken proxy's retry_after of 10**12 s overflowed the retry job's date, so an answer
    to deliver later went to the dead letters instead (no number: Telegram's 1 s)."""
    payload = {"ok": False, "error_code": 429, "parameters": {"retry_after": sent}}
    error = telegram_error("sendMessage", status=429, payload=payload)
    assert isinstance(error, TelegramRateLimitError)
    assert error.retry_after == kept
