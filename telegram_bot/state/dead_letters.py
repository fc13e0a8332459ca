"""The dead-letter queue: updates whose handler raised, kept for replay or drop.

Letters live under ``dlq:<update_id>`` with a retention TTL (default 7 days), so a bot crashing
in a loop cannot fill the store forever. ``dlq:`` is an indexed family: listing a page costs a
page, not a walk of the keyspace, on every backend. The payload is kept as received (operators
replay it); the error text is redacted of tokens before it is stored.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

from telegram_bot.redaction import redact
from telegram_bot.state.base import KVStore

DEFAULT_RETENTION_MS = 7 * 24 * 3600 * 1000
UPDATE_TYPES = (
    "message",
    "edited_message",
    "channel_post",
    "edited_channel_post",
    "callback_query",
    "chat_join_request",
    "my_chat_member",
    "chat_member",
    "inline_query",
    "poll",
    "poll_answer",
)


@dataclass(frozen=True)
class DeadLetter:
    update_id: int
    update_type: str
    error_class: str
    error: str
    failed_at_ms: int
    update: dict[str, Any]


class DeadLetterStore:
    def __init__(self, store: KVStore, *, retention_ms: int = DEFAULT_RETENTION_MS) -> None:
        self.store = store
        self.retention_ms = retention_ms

    @staticmethod
    def key(update_id: int) -> str:
        return f"dlq:{update_id}"

    def put(self, update: dict[str, Any], error: BaseException) -> DeadLetter:
        """Keep ``update`` with the error that ``error`` describes, replacing an older letter."""
        update_id = int(update.get("update_id", 0))
        letter = DeadLetter(
            update_id=update_id,
            update_type=update_type(update),
            error_class=type(error).__name__,
            error=redact(str(error))[:2000],
            failed_at_ms=int(time.time() * 1000),
            update=update,
        )
        self.store.set(self.key(update_id), asdict(letter), self.retention_ms)
        return letter

    def get(self, update_id: int) -> DeadLetter | None:
        return _letter(self.store.get(self.key(update_id)))

    def page(
        self, cursor: str | None = None, limit: int = 50
    ) -> tuple[list[DeadLetter], str | None]:
        """A page of letters in key order: two store calls, whatever else the store holds
        (``dlq:`` is an indexed family, see keys.INDEXED_FAMILIES). ``cursor`` must be one this
        method returned; any other is refused with InvalidValueError."""
        keys, next_cursor = self.store.scan("dlq:", cursor, limit)
        letters = [letter for raw in self.store.get_many(keys) if (letter := _letter(raw))]
        return letters, next_cursor

    def drop(self, update_id: int) -> None:
        self.store.delete(self.key(update_id))


def update_type(update: dict[str, Any]) -> str:
    for name in UPDATE_TYPES:
        if name in update:
            return name
    return next((key for key in update if key != "update_id"), "unknown")


def _letter(raw: Any) -> DeadLetter | None:
    """A stored letter, or None for an absent or unreadable value."""
    if not isinstance(raw, dict):
        return None
    try:
        return DeadLetter(**raw)
    except TypeError:
        return None
