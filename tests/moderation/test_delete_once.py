"""The one deletion a rule and a report share: what Telegram answers decides the record."""

from __future__ import annotations

from typing import Any

import pytest

from moderation import services as moderation
from telegram_bot.audit import Outcome
from telegram_bot.errors import TelegramApiError, TelegramRateLimitError


class Client:
    def __init__(self, error: TelegramApiError | None = None) -> None:
        self.error = error
        self.calls: list[tuple[int, int]] = []

    def delete_message(self, *, chat_id: int, message_id: int) -> bool:
        self.calls.append((chat_id, message_id))
        if self.error is not None:
            raise self.error
        return True


def run(client: Client, *, in_job: bool = False) -> tuple[Any, list[Any], list[Any]]:
    retried: list[Any] = []
    recorded: list[Any] = []
    result = moderation.delete_once(
        client,  # type: ignore[arg-type]
        -100,
        42,
        retry=retried.append,
        record=lambda outcome, note: recorded.append((outcome, note)),
        in_job=in_job,
    )
    return result, retried, recorded


def test_a_deleted_message_is_recorded_done_and_says_after_retry_in_its_job() -> None:
    assert run(Client()) == ((moderation.DELETED, None), [], [(Outcome.DONE, "")])
    assert run(Client(), in_job=True)[2] == [(Outcome.DONE, "after retry")]


def test_a_message_already_gone_counts_as_done() -> None:
    gone = TelegramApiError(
        "deleteMessage",
        status=400,
        error_code=400,
        description="Bad Request: message to delete not found",
    )
    (status, refusal), retried, recorded = run(Client(gone))
    assert status == moderation.GONE and refusal is gone and not retried
    assert recorded == [(Outcome.DONE, gone.description)]


def test_a_refusal_for_good_is_recorded_failed_and_returned() -> None:
    old = TelegramApiError(
        "deleteMessage",
        status=400,
        error_code=400,
        description="Bad Request: message can't be deleted",
    )
    (status, refusal), retried, recorded = run(Client(old))
    assert status == moderation.REFUSED and refusal is old and not retried
    assert recorded == [(Outcome.FAILED, old.description)]


def test_a_retryable_refusal_goes_to_retry_unrecorded_and_is_raised_inside_the_job() -> None:
    flood = TelegramRateLimitError("deleteMessage", retry_after=2)
    (status, _), retried, recorded = run(Client(flood))
    assert status == moderation.QUEUED and retried == [flood] and recorded == []
    with pytest.raises(TelegramRateLimitError):
        run(Client(flood), in_job=True)
