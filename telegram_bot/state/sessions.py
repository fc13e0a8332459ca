"""Versioned sessions: ``{"v": N, "d": <data>}`` under ``session:<scope>:<user>``.

A build that changes the shape of its session data bumps ``version`` and gives ``migrate``,
which receives the stored version (0 for a value written without an envelope) and the raw
payload. A value that fails to decode or migrate is logged and read as absent, so the caller
falls back to a fresh session instead of crashing on it.

Nothing uses it yet, on purpose: the per-user state kept today is not session state (rate-limit
windows and refusal flags under ``rl:``, stats facts such as ``last_message:``, the join-request
pointer ``jr:q:`` that belongs to its record, conversations in ``WorkflowStore``). It is the
store for the per-user preferences the members and language features will keep (a member's
profile, the chosen language), so that those have versioning and migration from day one instead
of raw keys.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from telegram_bot.state.base import KVStore

log = logging.getLogger(__name__)
T = TypeVar("T")


class SessionDecodeError(ValueError):
    """Raised by a ``decode`` or ``migrate`` hook for a payload it cannot read."""


def _identity(data: Any) -> Any:
    return data


class SessionStore(Generic[T]):
    """Sessions of one schema ``version`` for users, optionally scoped to a chat."""

    def __init__(
        self,
        store: KVStore,
        *,
        version: int,
        decode: Callable[[Any], T] = _identity,
        encode: Callable[[T], Any] = _identity,
        migrate: Callable[[int, Any], T] | None = None,
        ttl_ms: int | None = None,
    ) -> None:
        if version < 1:
            raise ValueError("session version starts at 1")
        self.store = store
        self.version = version
        self.decode = decode
        self.encode = encode
        self.migrate = migrate
        self.ttl_ms = ttl_ms

    @staticmethod
    def key(user_id: int, chat_id: int | None = None) -> str:
        scope = "u" if chat_id is None else str(chat_id)
        return f"session:{scope}:{user_id}"

    def load(self, user_id: int, chat_id: int | None = None) -> T | None:
        """The user's session, migrated to the current version; None when absent or unreadable."""
        key = self.key(user_id, chat_id)
        try:
            raw = self.store.get(key)
        except ValueError as exc:  # corrupt JSON in the backend
            log.error("session %s is not valid JSON, reading it as absent: %s", key, exc)
            return None
        if raw is None:
            return None
        stored_version, payload = _unwrap(raw)
        try:
            if stored_version == self.version:
                return self.decode(payload)
            if self.migrate is None:
                raise SessionDecodeError(f"no migration from version {stored_version}")
            session = self.migrate(stored_version, payload)
        except (SessionDecodeError, ValueError, TypeError, KeyError) as exc:
            log.error(
                "session %s (version %s) cannot be read, reading it as absent: %s",
                key,
                stored_version,
                exc,
            )
            return None
        # Persist the migrated value unless someone wrote the key meanwhile.
        self.store.compare_and_set(key, raw, self._envelope(session), self.ttl_ms)
        return session

    def save(self, user_id: int, session: T, chat_id: int | None = None) -> None:
        self.store.set(self.key(user_id, chat_id), self._envelope(session), self.ttl_ms)

    def delete(self, user_id: int, chat_id: int | None = None) -> None:
        self.store.delete(self.key(user_id, chat_id))

    def _envelope(self, session: T) -> dict[str, Any]:
        return {"v": self.version, "d": self.encode(session)}


def _unwrap(raw: Any) -> tuple[int, Any]:
    """(version, payload); a value without a valid envelope is version 0."""
    if isinstance(raw, dict) and set(raw) == {"v", "d"}:
        version = raw["v"]
        if isinstance(version, int) and not isinstance(version, bool) and version >= 1:
            return version, raw["d"]
    return 0, raw
