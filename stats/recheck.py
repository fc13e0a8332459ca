"""Recheck marks: a closed day is not served as verified until a verification has seen its
late messages.

A late message (its day closed, or about to) writes, in its KV commit, the day's recheck mark
``stats:recheck:{chat}:{day}`` -> ``{"at": ms, "m": message_id}`` (``counting.late_ops``), a
value unique to the message (a chat's message ids are). The reads show a verified day whose
mark is pending as "being checked" (``stats.selectors``), never as verified.

Whoever verifies a day under its exclusive lock (the reconciliation, finalize) reads the mark
there. Every late message whose KV commit is in that value then had its database add either
committed or rolled back (a live writer holds the day's lock shared from before its KV commit
to its database commit; one killed in between rolled back): the verdict accounts for it, a
short database failing the verification. Once the verification committed, the mark is retired
with a compare-and-set from the value read (``rechecks_done``): a late message counted since
wrote a value of its own, which stays pending until a later verification sees it. So a day
with a late message no verification has seen is never served as verified, in particular not
while a writer killed between its KV commit and its database add left it short.

A KV store that lost its data lost the marks too: its days are served as the database has
them (verified days stay verified, as before the marks existed).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date
from typing import Any

from stats import keys
from telegram_bot.state import KVStore

RETIRED_TTL_MS = 60_000


def recheck_pending(value: Any) -> bool:
    """Whether a recheck mark (as read) names a late message no verification has seen."""
    return isinstance(value, dict) and "at" in value


def rechecks_done(store: KVStore, seen: Iterable[tuple[int, date, Any]]) -> None:
    """Retire the recheck marks (chat, day, value) that a verification, now committed, read
    under the days' exclusive locks, unless a later late message set them again."""
    for chat_id, day, value in seen:
        if recheck_pending(value):
            store.compare_and_set(
                keys.recheck_key(chat_id, day), value, {"checked": value["at"]}, RETIRED_TTL_MS
            )
