"""A KV store that passes everything to another one, pausing briefly and at random before
reads and commits, so that concurrent writers interleave in many different orders."""

from __future__ import annotations

import random
import threading
import time
from typing import Any

from telegram_bot.state.base import KVStore, RawOp


class JitterStore(KVStore):
    def __init__(
        self, inner: KVStore, *, seed: int, max_pause: float = 0.002, commit_pause: float = 0.0
    ) -> None:
        """Pauses up to ``max_pause`` s before reads and commits, and up to ``commit_pause``
        after a commit (the window between a KV commit and its database add)."""
        super().__init__(prefix=inner.prefix)
        self.inner, self.url = inner, inner.url
        self.max_pause, self.commit_pause = max_pause, commit_pause
        self._rng = random.Random(seed)
        self._lock = threading.Lock()

    def _pause(self, longest: float | None = None) -> None:
        with self._lock:
            pause = self._rng.random() * (self.max_pause if longest is None else longest)
        time.sleep(pause)

    def _get(self, raw_key: str) -> str | None:
        self._pause()
        return self.inner._get(raw_key)

    def _apply_once(
        self, raw_marker: str, marker_text: str, marker_ttl_ms: int | None, ops: list[RawOp]
    ) -> bool:
        self._pause()
        done = self.inner._apply_once(raw_marker, marker_text, marker_ttl_ms, ops)
        self._pause(self.commit_pause)  # between the KV commit and the database add
        return done

    def _set(self, raw_key: str, text: str, ttl_ms: int | None) -> None:
        self.inner._set(raw_key, text, ttl_ms)

    def _delete(self, raw_key: str) -> None:
        self.inner._delete(raw_key)

    def _delete_if_equal(self, raw_key: str, expected: str) -> bool:
        return self.inner._delete_if_equal(raw_key, expected)

    def _set_if_absent(self, raw_key: str, text: str, ttl_ms: int | None) -> bool:
        return self.inner._set_if_absent(raw_key, text, ttl_ms)

    def _replace_if_equal(self, raw_key: str, expected: str, text: str, ttl_ms: int | None) -> bool:
        return self.inner._replace_if_equal(raw_key, expected, text, ttl_ms)

    def _increment(self, raw_key: str, by: int, ttl_ms: int | None) -> int:
        return self.inner._increment(raw_key, by, ttl_ms)

    def _set_if_absent_and_increment(
        self,
        raw_key: str,
        text: str,
        ttl_ms: int | None,
        ops: list[RawOp],
        raw_absent: str | None = None,
    ) -> list[int] | None:
        return self.inner._set_if_absent_and_increment(raw_key, text, ttl_ms, ops, raw_absent)

    def _scan(self, raw_prefix: str, cursor: str | None, limit: int) -> tuple[list[str], Any]:
        return self.inner._scan(raw_prefix, cursor, limit)

    def _ping(self) -> None:
        self.inner._ping()
