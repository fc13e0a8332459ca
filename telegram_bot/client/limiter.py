"""The one outgoing limiter: every message the bot sends waits here for Telegram's limits.

Telegram allows a bot about 30 messages a second overall, 1 a second in one private chat and
20 a minute in one group or channel; past them it answers 429 with ``retry_after``. The client
(``TelegramClient.call``) asks ``OutgoingLimiter.before_send`` for a slot before each send
method and tells ``rate_limited`` about every 429, so every feature and every process that
shares the limiter's store is paced by the same numbers:

- each limit is a sliding window of reservations (``rl:out:<bucket>``: the times in
  milliseconds of the last N sends). A sender reserves the first time at which the window
  still has room (never before the last reservation, so the window holds), writes it with
  compare-and-set (a concurrent sender that wrote first makes it read again) and sleeps until
  then. A reservation is kept even if its process then dies: a lost slot only slows others;
- a 429 sets the shared pause ``rl:out:pause`` (the time Telegram named, the later of two),
  which every sender waits out before its next send: the whole bot slows down, not the one
  sender that hit it;
- bulk sends (a broadcast: ``with bulk_sends():``) reserve first in a bucket of their own
  holding ``bulk_share`` of the overall rate, so interactive sends (answers to updates, admin
  notices) always find room in the overall window and do not queue behind a broadcast;
- an interactive send whose slot is further away than ``max_wait`` is not sent: it raises a
  ``TelegramRateLimitError`` that never left (``reached`` False), which every sender already
  handles as a refusal to retry later (a webhook thread is not held for a minute).

The store is the state layer's (Redis across processes and machines; an in-process memory
store on the embedded default, one process). No Django here: ``telegram_bot.bot`` builds it
from the settings.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol

from telegram_bot.errors import TelegramApiError, TelegramRateLimitError

# Methods that put a message in a chat: Telegram's flood limits count these.
SEND_METHODS = frozenset(
    {
        "sendMessage",
        "sendPhoto",
        "sendVideo",
        "sendAudio",
        "sendDocument",
        "sendAnimation",
        "sendVoice",
        "sendVideoNote",
        "sendMediaGroup",
        "sendPoll",
        "sendSticker",
        "sendLocation",
        "sendVenue",
        "sendContact",
        "sendDice",
        "sendPaidMedia",
        "copyMessage",
        "copyMessages",
        "forwardMessage",
        "forwardMessages",
    }
)
PAUSE_KEY = "rl:out:pause"
ALL_KEY = "rl:out:all"
BULK_KEY = "rl:out:bulk"
CAS_ATTEMPTS = 50  # a reservation that loses this many races in a row gives up (not sent)

_bulk: ContextVar[bool] = ContextVar("outgoing_bulk", default=False)


@contextmanager
def bulk_sends() -> Iterator[None]:
    """Sends inside this block are bulk (a broadcast): they use their smaller share."""
    token = _bulk.set(True)
    try:
        yield
    finally:
        _bulk.reset(token)


def is_bulk() -> bool:
    return _bulk.get()


_slot_taken: ContextVar[bool] = ContextVar("outgoing_slot_taken", default=False)


@contextmanager
def slot_taken() -> Iterator[None]:
    """The caller waited for this send's slot itself (``OutgoingLimiter.before_send``) before
    claiming the send, so that nothing but the call happens between the claim and Telegram's
    answer: the client does not wait again for sends inside this block."""
    token = _slot_taken.set(True)
    try:
        yield
    finally:
        _slot_taken.reset(token)


def is_slot_taken() -> bool:
    return _slot_taken.get()


class Store(Protocol):
    """What the limiter needs of a KV store (``telegram_bot.state.KVStore``)."""

    def get_many(self, keys: list[str]) -> list[Any]: ...

    def compare_and_set(
        self, key: str, expected: Any, value: Any, ttl_ms: int | None = None
    ) -> bool: ...


@dataclass(frozen=True)
class Limits:
    """Telegram's limits as the operator configured them (validated by the settings)."""

    per_second: int = 30
    private_chat_per_second: int = 1
    group_per_minute: int = 20
    bulk_share: float = 0.8  # of per_second, for bulk sends
    max_wait: float = 10.0  # seconds an interactive send may wait for its slot

    def __post_init__(self) -> None:
        if self.per_second < 1 or self.private_chat_per_second < 1 or self.group_per_minute < 1:
            raise ValueError("outgoing limits must be at least 1")
        if not 0 < self.bulk_share <= 1:
            raise ValueError("the bulk share must be above 0 and at most 1")
        if self.max_wait < 0:
            raise ValueError("the longest wait cannot be negative")

    @property
    def bulk_per_second(self) -> int:
        return max(1, int(self.per_second * self.bulk_share))


@dataclass(frozen=True)
class _Bucket:
    key: str
    limit: int
    window_ms: int


class OutgoingLimiter:
    """Pacing of sends across every process that shares ``store``. Thread-safe (the state is
    in the store; each call works on its own copies)."""

    def __init__(
        self,
        store: Store,
        limits: Limits,
        *,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.store = store
        self.limits = limits
        self._clock = clock
        self._sleep = sleep

    def before_send(self, method: str, chat_id: Any, *, max_wait: float | None = None) -> float:
        """Wait for this send's slot; return the seconds waited.

        Raises a not-sent ``TelegramRateLimitError`` (``retry_after``: the wait) when the slot
        is further away than ``max_wait`` (default ``limits.max_wait``), having reserved
        nothing, and a not-sent, retryable ``TelegramApiError`` when the store fails (a limiter
        that cannot count must not send unpaced; nothing left this machine)."""
        limit = self.limits.max_wait if max_wait is None else max_wait
        started = self._clock()
        try:
            self._take_slot(method, chat_id, is_bulk(), limit)
        except TelegramApiError:
            raise
        except Exception as exc:  # the state layer's errors: unreachable, timed out
            raise TelegramApiError(
                method,
                description=f"outgoing limiter unavailable ({type(exc).__name__})",
                retryable=True,
                reached=False,
            ) from None
        return max(self._clock() - started, 0.0)

    def rate_limited(self, retry_after: float) -> None:
        """Telegram answered 429: every sender waits ``retry_after`` seconds (the later pause
        of two wins)."""
        until = int((self._clock() + retry_after) * 1000)
        for _ in range(CAS_ATTEMPTS):
            [current] = self.store.get_many([PAUSE_KEY])
            if isinstance(current, int) and current >= until:
                return
            ttl = max(1, until - int(self._clock() * 1000)) + 1000
            try:
                if self.store.compare_and_set(PAUSE_KEY, current, until, ttl):
                    return
            except Exception:  # the pause is best effort: the 429 is raised to the sender anyway
                return

    def paused_until(self) -> float | None:
        """When the shared pause ends (seconds since the epoch), or None."""
        [until] = self.store.get_many([PAUSE_KEY])
        return until / 1000 if isinstance(until, int) and until / 1000 > self._clock() else None

    # --- reservations ------------------------------------------------------------------------
    def _buckets(self, chat_id: Any) -> list[_Bucket]:
        limits = self.limits
        buckets = []
        if chat_id is not None:
            chat = str(chat_id)
            if chat.isdigit():  # a user's private chat
                buckets.append(_Bucket(f"rl:out:c:{chat}", limits.private_chat_per_second, 1000))
            else:  # a group, supergroup or channel (-100..., @name)
                buckets.append(_Bucket(f"rl:out:c:{chat.lower()}", limits.group_per_minute, 60_000))
        buckets.append(_Bucket(ALL_KEY, limits.per_second, 1000))
        return buckets

    def _take_slot(self, method: str, chat_id: Any, bulk: bool, max_wait: float) -> None:
        if bulk:
            # The bulk share first, waited out before anything else is reserved: a bulk send
            # never holds a future slot in the overall window that an answer would queue behind.
            bucket = _Bucket(BULK_KEY, self.limits.bulk_per_second, 1000)
            self._wait_for([bucket], method, max_wait)
        self._wait_for(self._buckets(chat_id), method, max_wait)

    def _wait_for(self, buckets: list[_Bucket], method: str, max_wait: float) -> None:
        """Reserve a slot in every bucket (the later of them) and sleep until it."""
        values = self.store.get_many([PAUSE_KEY, *(b.key for b in buckets)])
        now = int(self._clock() * 1000)
        earliest = max(now, values[0] if isinstance(values[0], int) else 0)
        # Look before reserving: a send that would wait too long reserves nothing.
        slot = earliest
        for bucket, value in zip(buckets, values[1:], strict=True):
            slot = _first_slot(_times(value, now, bucket), bucket, slot)
        if (slot - now) / 1000 > max_wait:
            raise _not_sent(method, (slot - now) / 1000)
        slot = earliest
        for bucket, value in zip(buckets, values[1:], strict=True):
            slot = self._reserve(bucket, value, slot)
        wait = slot / 1000 - self._clock()
        if wait > 0:
            self._sleep(wait)

    def _reserve(self, bucket: _Bucket, value: Any, earliest: int) -> int:
        """Reserve the first slot at or after ``earliest`` in ``bucket`` (compare-and-set,
        again from a fresh read when another sender wrote first); its time in ms."""
        for _ in range(CAS_ATTEMPTS):
            now = int(self._clock() * 1000)
            times = _times(value, now, bucket)
            slot = _first_slot(times, bucket, max(earliest, now))
            reserved = [*times, slot][-bucket.limit :]
            ttl = slot - now + bucket.window_ms
            if self.store.compare_and_set(bucket.key, value, reserved, ttl):
                return slot
            [value] = self.store.get_many([bucket.key])
        raise TelegramApiError(
            "outgoing limiter",
            description=f"{bucket.key}: too many concurrent senders",
            retryable=True,
            reached=False,
        )


def _times(value: Any, now: int, bucket: _Bucket) -> list[int]:
    """The reservations still inside the window that ends now (or later)."""
    if not isinstance(value, list):
        return []
    return [
        t
        for t in value
        if isinstance(t, int) and not isinstance(t, bool) and t > now - bucket.window_ms
    ]


def _first_slot(times: list[int], bucket: _Bucket, earliest: int) -> int:
    """The first time at or after ``earliest`` (and the last reservation) at which the window
    ending there holds fewer than ``limit`` sends."""
    slot = max(earliest, times[-1]) if times else earliest
    if len(times) >= bucket.limit:
        slot = max(slot, times[-bucket.limit] + bucket.window_ms)
    return slot


def _not_sent(method: str, wait: float) -> TelegramRateLimitError:
    return TelegramRateLimitError(
        method,
        retry_after=math.ceil(wait),
        status=None,
        error_code=None,
        description=f"held back: the outgoing limits leave no slot for {wait:.1f} s",
        reached=False,  # nothing left this machine: sending it later is safe
    )
