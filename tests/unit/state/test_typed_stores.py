"""Dead letters on top of the KV contract (workflows: test_workflows.py)."""

from __future__ import annotations

import time

from telegram_bot.state import KVStore
from telegram_bot.state.dead_letters import DeadLetterStore


def test_dead_letters_keep_the_update_and_a_redacted_error(kv: KVStore) -> None:
    letters = DeadLetterStore(kv, retention_ms=60_000)
    update = {"update_id": 42, "message": {"message_id": 1, "text": "hi"}}
    token = "123456789:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
    letters.put(update, RuntimeError(f"boom at https://api.telegram.org/bot{token}/sendMessage"))
    letter = letters.get(42)
    assert letter is not None
    assert (letter.update_type, letter.error_class, letter.update) == (
        "message",
        "RuntimeError",
        update,
    )
    assert token not in letter.error
    page, cursor = letters.page()
    assert [item.update_id for item in page] == [42]
    assert cursor is None
    letters.drop(42)
    assert letters.get(42) is None


def test_dead_letters_expire_after_their_retention(kv: KVStore) -> None:
    letters = DeadLetterStore(kv, retention_ms=150)
    letters.put({"update_id": 1, "callback_query": {}}, ValueError("x"))
    time.sleep(0.25)
    assert letters.get(1) is None
    assert letters.page() == ([], None)
