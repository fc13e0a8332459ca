"""send_once: one call, its outcome handed to exactly one of sent / refused / unknown."""

from __future__ import annotations

from typing import Any

import pytest

from telegram_bot.delivery import send_once
from telegram_bot.errors import TelegramApiError


def outcome(send: Any) -> tuple[str, Any]:
    calls: list[str] = []

    def call() -> Any:
        calls.append("send")
        return send()

    result = send_once(
        call,
        sent=lambda value: ("sent", value),
        refused=lambda exc: ("refused", exc.status),
        unknown=lambda why, exc: ("unknown", why),
    )
    assert calls == ["send"]  # never a second call, whatever happened
    return result


def fail(exc: BaseException) -> Any:
    def send() -> Any:
        raise exc

    return send


def test_an_answer_is_sent() -> None:
    assert outcome(lambda: {"message_id": 7}) == ("sent", {"message_id": 7})


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (TelegramApiError("sendMessage", status=403, error_code=403), ("refused", 403)),
        (TelegramApiError("sendMessage", status=500, error_code=500), ("refused", 500)),
        (TelegramApiError("sendMessage", reached=False), ("refused", None)),  # never left
    ],
)
def test_a_refusal_or_a_request_that_never_left_is_refused(
    error: TelegramApiError, expected: tuple[str, Any]
) -> None:
    assert outcome(fail(error)) == expected


def test_a_call_that_may_have_arrived_is_unknown() -> None:
    kind, why = outcome(fail(TelegramApiError("sendMessage", status=504, reached=None)))
    assert kind == "unknown" and why.startswith("TelegramApiError: Telegram sendMessage failed")


def test_an_exception_that_is_not_telegrams_is_recorded_unknown_then_raised() -> None:
    recorded: list[str] = []
    with pytest.raises(KeyError):
        send_once(
            fail(KeyError("token 123456:ABCDEFGHIJKLMNOPQRSTUVWX in a message")),
            sent=lambda value: None,
            refused=lambda exc: None,
            unknown=lambda why, exc: recorded.append(why),
        )
    assert len(recorded) == 1 and recorded[0].startswith("KeyError:")
    assert "ABCDEFGHIJ" not in recorded[0]  # redacted before anyone records it
