"""Writes of the stats app on the update path (the backfill lives in ``stats.backfill``)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from django.conf import settings

from stats import keys
from stats.config import counting_config
from stats.counting import MessageFacts, _violations, counting_ops, join_ops, message_facts
from stats.live_writer import RowDelta, count_once
from telegram_bot.state import KVStore
from telegram_bot.state.base import Op
from telegram_bot.updates import Message


@dataclass(frozen=True)
class CountedMessage:
    facts: MessageFacts
    ops: list[Op]


def message_to_count(message: Message, *, store: KVStore) -> CountedMessage | None:
    """The facts and KV ops of a message that counts, or None for one that does not.

    Reads the KV store only for a message with a link while a "links from new members" rule is
    on (is the sender a new member?); everything else is written by the caller's one commit.
    """
    config = counting_config()
    sender = message.from_user

    def is_new_member() -> bool:
        if sender is None:
            return False
        return store.get(keys.joined_key(message.chat.id, sender.id)) is not None

    facts = message_facts(message, config, is_new_member=is_new_member)
    if facts is None:
        return None
    return CountedMessage(facts, counting_ops(facts, config))


def stats_count_once(
    *, store: KVStore, counted: CountedMessage, commit: Callable[[Sequence[Op]], bool]
) -> bool:
    """Count a message: ``commit(counted.ops)`` (the update's KV commit with its done-marker)
    and the database add, ordered against the backfill by the day's lock (``stats.daylock``).
    Returns whether the commit applied (False: a duplicate). Raises only what ``commit``
    raises; a failed database add poisons the day instead of raising (once the commit is
    done, failing the update would count it twice on replay)."""
    row = RowDelta(counted.facts.chat_id, counted.facts.day, counted.facts.user_id,
                   counted.facts.deltas())  # fmt: skip
    return count_once(store=store, commit=lambda: commit(counted.ops), rows=[row])


def message_violations(message: Message, store: KVStore) -> dict[str, int]:
    """The violations of a group message by the statistics app's rules (``{severity: n}``),
    for the core's violation registry (``telegram_bot.violations``): moderation acts on them
    without importing this app. Reads the KV store only for a link while a link rule is on."""
    sender = message.from_user
    if sender is None or message.chat.type not in ("group", "supergroup"):
        return {}

    def is_new_member() -> bool:
        return store.get(keys.joined_key(message.chat.id, sender.id)) is not None

    return _violations(message.text_or_caption, message, counting_config(), is_new_member)


def joins_to_record(message: Message) -> list[Op]:
    return join_ops(message, counting_config(), now_ms=int(time.time() * 1000))


def stats_command_cooldown_take(*, store: KVStore, chat_id: int) -> str | None:
    """A token at most once per ``STATS_COMMAND_COOLDOWN_SECONDS`` (default 30) and chat;
    None while the chat's cooldown runs."""
    seconds = settings.STATS_COMMAND_COOLDOWN_SECONDS
    token = uuid.uuid4().hex
    taken = store.set_if_absent(_cooldown_key(chat_id), token, ttl_ms=max(1, seconds) * 1000)
    return token if taken else None


def stats_command_cooldown_give_back(*, store: KVStore, chat_id: int, token: str) -> None:
    """The answer did not go out (the database or Telegram failed): the re-delivery or the
    dead letter's replay may answer. Only this run's cooldown (compare-and-set on its token):
    a later run's, taken after this one's ran out, stays."""
    store.compare_and_set(_cooldown_key(chat_id), token, "given back", ttl_ms=1)


def _cooldown_key(chat_id: int) -> str:
    return f"lock:stats_cmd:{chat_id}"
