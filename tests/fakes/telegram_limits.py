"""Telegram's flood limits in the fake Bot API (opt-in per test).

``TelegramLimits(...).install(fake)`` makes the fake answer a send past the limits like
Telegram does: 429 "Too Many Requests: retry after N" with ``parameters.retry_after``. Each
limit is a sliding window over the sends the fake accepted (a refused send does not count):
``per_second`` overall, ``private_per_second`` per private chat (a positive id), and
``group_per_minute`` per group or channel. ``tolerance`` seconds are taken off each window
(requests paced exactly at the limit arrive with a few milliseconds of jitter). It also records
what it saw: ``accepted`` (method, chat, time) and ``refused`` counts, and ``max_in_window``
the fullest overall one-second window. ``fake.reset()`` uninstalls it.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable
from typing import Any

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
        "copyMessage",
        "forwardMessage",
    }
)


class TelegramLimits:
    def __init__(
        self,
        *,
        per_second: int = 30,
        private_per_second: int = 1,
        group_per_minute: int = 20,
        retry_after: int = 1,
        tolerance: float = 0.05,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.per_second = per_second
        self.private_per_second = private_per_second
        self.group_per_minute = group_per_minute
        self.retry_after = retry_after
        self.tolerance = tolerance
        self.clock = clock
        self.lock = threading.Lock()
        self.accepted: list[tuple[str, str, float]] = []
        self.refused = 0
        self.max_in_window = 0
        self._all: deque[float] = deque()
        self._chats: dict[str, deque[float]] = defaultdict(deque)

    def install(self, fake: Any) -> TelegramLimits:
        fake.limits = self
        return self

    def refuse(self, method: str, params: dict[str, Any]) -> tuple[str, dict[str, int]] | None:
        """None to accept the send (counted), or the 429's description and parameters."""
        if method not in SEND_METHODS:
            return None
        now = self.clock()
        chat = str(params.get("chat_id", ""))
        private = chat.isdigit()
        chat_window = 1.0 if private else 60.0
        chat_limit = self.private_per_second if private else self.group_per_minute
        with self.lock:
            _drop_before(self._all, now - 1.0 + self.tolerance)
            times = self._chats[chat]
            _drop_before(times, now - chat_window + self.tolerance)
            if len(self._all) >= self.per_second or (chat and len(times) >= chat_limit):
                self.refused += 1
                return (
                    f"Too Many Requests: retry after {self.retry_after}",
                    {"retry_after": self.retry_after},
                )
            self._all.append(now)
            times.append(now)
            self.max_in_window = max(self.max_in_window, len(self._all))
            self.accepted.append((method, chat, now))
        return None


def _drop_before(times: deque[float], cutoff: float) -> None:
    while times and times[0] <= cutoff:
        times.popleft()
