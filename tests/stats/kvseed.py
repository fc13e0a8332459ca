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
    """Counters of one member's day; ``total`` also adds the messages to the chat's total."""
    store.increment(keys.counter_key(keys.MESSAGES, chat_id, day, user_id), messages)
    if words:
        store.increment(keys.counter_key(keys.WORDS, chat_id, day, user_id), words)
    for hour, count in (hours or {12: messages}).items():
        store.increment(keys.counter_key(keys.HOURS, chat_id, day, user_id, f"{hour:02d}"), count)
    if voice[0]:
        store.increment(
            keys.counter_key(keys.MEDIA, chat_id, day, user_id, "voice_count"), voice[0]
        )
        store.increment(
            keys.counter_key(keys.MEDIA, chat_id, day, user_id, "voice_seconds"), voice[1]
        )
    if profanity:
        store.increment(
            keys.counter_key(keys.CATEGORY, chat_id, day, user_id, "profanity"), profanity
        )
    if total:
        store.increment(keys.activity_key(chat_id, day), messages)
