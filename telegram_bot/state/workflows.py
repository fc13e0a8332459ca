"""Workflow state: one multi-step conversation per (chat, user), with expiry, resumable.

The state lives in ``workflow:<chat>:<user>`` as JSON, so it survives restarts and is seen by
every process. An expired workflow is still returned for a grace period with ``expired=True``,
so that a handler can tell the user to start again instead of silently ignoring the message.
Every change is a compare-and-set on the revision: two messages racing on one workflow cannot
both advance it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from telegram_bot.errors import WorkflowError
from telegram_bot.state.base import KVStore

GRACE_MS = 24 * 3600 * 1000


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class Workflow:
    chat_id: int
    user_id: int
    name: str
    step: str
    expires_at_ms: int
    revision: int = 1
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def expired(self) -> bool:
        return _now_ms() >= self.expires_at_ms


def _new(
    chat_id: int, user_id: int, name: str, step: str, ttl_ms: int, data: dict[str, Any] | None
) -> Workflow:
    if ttl_ms <= 0:
        raise WorkflowError("workflow ttl must be positive")
    return Workflow(
        chat_id=chat_id,
        user_id=user_id,
        name=name,
        step=step,
        expires_at_ms=_now_ms() + ttl_ms,
        data=dict(data or {}),
    )


class WorkflowStore:
    def __init__(self, store: KVStore) -> None:
        self.store = store

    @staticmethod
    def key(chat_id: int, user_id: int) -> str:
        return f"workflow:{chat_id}:{user_id}"

    def start(
        self,
        *,
        chat_id: int,
        user_id: int,
        name: str,
        step: str,
        ttl_ms: int,
        data: dict[str, Any] | None = None,
    ) -> Workflow:
        """Begin ``name`` at ``step``, replacing whatever workflow the user had in this chat."""
        workflow = _new(chat_id, user_id, name, step, ttl_ms, data)
        self.store.set(self.key(chat_id, user_id), asdict(workflow), ttl_ms + GRACE_MS)
        return workflow

    def start_if_free(
        self,
        *,
        chat_id: int,
        user_id: int,
        name: str,
        step: str,
        ttl_ms: int,
        data: dict[str, Any] | None = None,
        ours: Callable[[Workflow], bool] = lambda _workflow: False,
    ) -> Workflow | None:
        """``start``, unless the user has another live workflow in this chat (one for which
        ``ours`` is False: a re-delivery may restart its own): None then, nothing changed.
        Compare-and-set: of two starts at once, one wins and the other finds it busy."""
        workflow = _new(chat_id, user_id, name, step, ttl_ms, data)
        key = self.key(chat_id, user_id)
        raw = self.store.get(key)
        current = self._parse(raw)
        if current is not None and not current.expired and not ours(current):
            return None
        if not self.store.compare_and_set(key, raw, asdict(workflow), ttl_ms + GRACE_MS):
            return None
        return workflow

    def get(self, *, chat_id: int, user_id: int) -> Workflow | None:
        """The user's workflow in this chat (possibly ``expired``), or None."""
        return self._parse(self.store.get(self.key(chat_id, user_id)))

    @staticmethod
    def _parse(raw: Any) -> Workflow | None:
        if not isinstance(raw, dict):
            return None
        try:
            return Workflow(**raw)
        except TypeError:
            return None

    def advance(
        self,
        workflow: Workflow,
        *,
        step: str,
        data: dict[str, Any] | None = None,
        ttl_ms: int | None = None,
    ) -> Workflow:
        """Move to ``step``; raise WorkflowError if it expired or changed since it was read."""
        if workflow.expired:
            raise WorkflowError("workflow expired")
        expires = _now_ms() + ttl_ms if ttl_ms is not None else workflow.expires_at_ms
        moved = replace(
            workflow,
            step=step,
            revision=workflow.revision + 1,
            expires_at_ms=expires,
            data=dict(workflow.data if data is None else data),
        )
        remaining = max(1, expires - _now_ms()) + GRACE_MS
        key = self.key(workflow.chat_id, workflow.user_id)
        if not self.store.compare_and_set(key, asdict(workflow), asdict(moved), remaining):
            raise WorkflowError("workflow changed concurrently")
        return moved

    def finish(self, workflow: Workflow) -> bool:
        """End the workflow if it is still the one read; say whether this call ended it."""
        key = self.key(workflow.chat_id, workflow.user_id)
        # A tombstone with a short TTL wins the race against a concurrent advance().
        return self.store.compare_and_set(key, asdict(workflow), {"finished": True}, 1000)

    def cancel(self, *, chat_id: int, user_id: int) -> None:
        self.store.delete(self.key(chat_id, user_id))
