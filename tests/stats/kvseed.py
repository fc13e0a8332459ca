"""Write daily counters straight into a KV store, laid out like counting does."""

from __future__ import annotations

from datetime import date

from stats import keys
from telegram_bot.state import KVStore


def seed_day(
    store: KVStore,
    chat_id: int,
    day: date,
    user_id: int,
    *,
    messages: int,
    words: int = 0,
    hours: dict[int, int] | None = None,
    voice: tuple[int, int] = (0, 0),
    profanity: int = 0,
    total: bool = True,
) -> None:
    """Counters of one member's day; ``total`` also adds every column to the chat's daily
    totals (``activity`` for messages), as counting does."""
    columns = {"message_count": messages, "word_count": words, "profanity_count": profanity}
    columns.update(voice_count=voice[0], voice_seconds=voice[1] if voice[0] else 0)
    for hour, count in (hours or {12: messages}).items():
        columns[f"hour_{hour:02d}"] = count
    for column, value in columns.items():
        if value:
            store.increment(keys.column_key(column, chat_id, day, user_id), value)
            if total:
                store.increment(keys.total_key(column, chat_id, day), value)
