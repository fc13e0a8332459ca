"""In-process backend: one dict under a lock. For tests and single-process tools only.

Beside the dict, each family's keys are kept in a sorted list, so a scan reads its family and
not the whole store (the database's primary key and Redis's index sets do the same there).
"""

from __future__ import annotations

import bisect
import threading
import time

from telegram_bot.errors import StateError
from telegram_bot.state.base import (
    KVStore,
    RawFinish,
    RawOp,
    is_integer_text,
    merged_text,
    met_trigger,
    prefix_successor,
)


def _now_ms() -> int:
    return int(time.monotonic() * 1000)


class MemoryStore(KVStore):
    """Keeps canonical JSON text like the other backends, so tests catch unstorable values."""

    url = "memory://"

    def __init__(self, *, prefix: str = "", bot: int | None = None) -> None:
        super().__init__(prefix=prefix, bot=bot)
        self._lock = threading.Lock()
        self._data: dict[str, tuple[str, int | None]] = {}
        self._sorted: dict[str, list[str]] = {}  # family -> its raw keys, sorted

    def _family(self, raw_key: str) -> list[str]:
        return self._sorted.setdefault(raw_key[len(self.prefix) :].partition(":")[0], [])

    def _put(self, raw_key: str, text: str, expires: int | None) -> None:
        if raw_key not in self._data:
            bisect.insort(self._family(raw_key), raw_key)
        self._data[raw_key] = (text, expires)

    def _forget(self, raw_key: str) -> None:
        if self._data.pop(raw_key, None) is not None:
            keys = self._family(raw_key)
            del keys[bisect.bisect_left(keys, raw_key)]

    def _live(self, raw_key: str, now: int) -> str | None:
        entry = self._data.get(raw_key)
        if entry is None:
            return None
        text, expires = entry
        if expires is not None and expires <= now:
            self._forget(raw_key)
            return None
        return text

    @staticmethod
    def _expiry(ttl_ms: int | None, now: int) -> int | None:
        return None if ttl_ms is None else now + ttl_ms

    def _get(self, raw_key: str) -> str | None:
        with self._lock:
            return self._live(raw_key, _now_ms())

    def _get_many(self, raw_keys: list[str]) -> list[str | None]:
        with self._lock:
            now = _now_ms()
            return [self._live(raw_key, now) for raw_key in raw_keys]

    def _set(self, raw_key: str, text: str, ttl_ms: int | None) -> None:
        with self._lock:
            self._put(raw_key, text, self._expiry(ttl_ms, _now_ms()))

    def _delete(self, raw_key: str) -> None:
        with self._lock:
            self._forget(raw_key)

    def _delete_if_equal(self, raw_key: str, expected: str) -> bool:
        with self._lock:
            if self._live(raw_key, _now_ms()) != expected:
                return False
            self._forget(raw_key)
            return True

    def _set_if_absent(self, raw_key: str, text: str, ttl_ms: int | None) -> bool:
        with self._lock:
            now = _now_ms()
            if self._live(raw_key, now) is not None:
                return False
            self._put(raw_key, text, self._expiry(ttl_ms, now))
            return True

    def _replace_if_equal(self, raw_key: str, expected: str, text: str, ttl_ms: int | None) -> bool:
        with self._lock:
            now = _now_ms()
            if self._live(raw_key, now) != expected:
                return False
            self._put(raw_key, text, self._expiry(ttl_ms, now))
            return True

    def _increment(self, raw_key: str, by: int, ttl_ms: int | None) -> int:
        with self._lock:
            now = _now_ms()
            self._check_integer(raw_key, now)
            return self._add(raw_key, by, ttl_ms, now)

    def _set_if_absent_and_increment(
        self,
        raw_key: str,
        text: str,
        ttl_ms: int | None,
        ops: list[RawOp],
        raw_absent: str | None = None,
    ) -> list[int] | None:
        with self._lock:
            now = _now_ms()
            if self._live(raw_key, now) is not None:
                return None
            if raw_absent is not None and self._live(raw_absent, now) is not None:
                return None
            for op in ops:  # all checked before anything is written
                self._check_integer(op.key, now)
            self._put(raw_key, text, self._expiry(ttl_ms, now))
            return [self._add(op.key, int(op.arg), op.ttl_ms, now) for op in ops]

    def _claim_or_finish(self, step: RawFinish) -> tuple[bool, list[int]] | None:
        with self._lock:
            now = _now_ms()
            if self._live(step.key, now) is not None:
                return None
            if self._live(step.done_key, now) is not None:
                return None
            if step.marker is not None and self._live(step.marker, now) == step.done:
                return None
            for op in [*step.increments, *(op for op in step.ops if op.kind == "i")]:
                self._check_integer(op.key, now)  # all checked before anything is written
            values = [self._add(op.key, int(op.arg), op.ttl_ms, now) for op in step.increments]
            if met_trigger(values, step.triggers):
                self._put(step.key, step.claim, self._expiry(step.claim_ttl_ms, now))
                return False, values
            for op in step.ops:
                if op.kind == "s":
                    self._put(op.key, op.arg, self._expiry(op.ttl_ms, now))
                else:
                    self._add(op.key, int(op.arg), op.ttl_ms, now)
            for key in (step.marker if step.write_marker else None, step.done_key):
                if key is not None:
                    self._put(key, step.done, self._expiry(step.done_ttl_ms, now))
            return True, values

    def _check_integer(self, raw_key: str, now: int) -> None:
        current = self._live(raw_key, now)
        if current is not None and not is_integer_text(current):
            raise StateError(f"cannot increment {raw_key!r}: it does not hold an integer")

    def _add(self, raw_key: str, by: int, ttl_ms: int | None, now: int) -> int:
        """Add ``by`` to a live integer (checked) or create it; the lock is held."""
        current = self._live(raw_key, now)
        if current is None:
            self._put(raw_key, str(by), self._expiry(ttl_ms, now))
            return by
        value = int(current) + by
        self._data[raw_key] = (str(value), self._data[raw_key][1])
        return value

    def _scan(
        self, raw_prefix: str, cursor: str | None, limit: int
    ) -> tuple[list[str], str | None]:
        with self._lock:
            now = _now_ms()
            keys = self._family(raw_prefix)
            start = (
                bisect.bisect_right(keys, self._raw(cursor))
                if cursor
                else bisect.bisect_left(keys, raw_prefix)
            )
            end = bisect.bisect_left(keys, prefix_successor(raw_prefix))
            page = []
            for raw_key in keys[start:end]:  # a copy: _live may forget expired keys
                if self._live(raw_key, now) is not None:
                    page.append(raw_key)
                    if len(page) == limit:
                        break
        next_cursor = self._logical(page[-1]) if len(page) == limit else None
        return page, next_cursor

    def _raw_page(
        self, raw_prefix: str, cursor: str | None, limit: int
    ) -> tuple[list[str], str | None]:
        with self._lock:
            now = _now_ms()
            keys = sorted(k for k in self._data if k.startswith(raw_prefix) and k > (cursor or ""))
            page = [k for k in keys if self._live(k, now) is not None][:limit]
        return page, page[-1] if len(page) == limit else None

    def _move(self, raw_from: str, raw_to: str) -> int:
        with self._lock:
            now = _now_ms()
            old = self._live(raw_from, now)
            if old is None:
                return 0
            old_expires = self._data[raw_from][1]
            new = self._live(raw_to, now)
            self._forget(raw_from)
            if new is None:
                self._put(raw_to, old, old_expires)
                return 1
            new_expires = self._data[raw_to][1]
            longer = (
                None
                if old_expires is None or new_expires is None
                else max(old_expires, new_expires)
            )
            self._put(raw_to, merged_text(old, new), longer)
            return 2

    def _apply_once(
        self, raw_marker: str, marker_text: str, marker_ttl_ms: int | None, ops: list[RawOp]
    ) -> bool:
        with self._lock:
            now = _now_ms()
            if self._live(raw_marker, now) == marker_text:
                return False
            for op in ops:
                current = self._live(op.key, now)
                if op.kind == "i" and current is not None and not is_integer_text(current):
                    raise StateError(f"cannot increment {op.key!r}: it does not hold an integer")
            for op in ops:
                current = self._live(op.key, now)
                if op.kind == "s" or current is None:
                    self._put(op.key, op.arg, self._expiry(op.ttl_ms, now))
                else:
                    self._data[op.key] = (str(int(current) + int(op.arg)), self._data[op.key][1])
            self._put(raw_marker, marker_text, self._expiry(marker_ttl_ms, now))
            return True

    def _ping(self) -> None:
        return None
