"""Dialogue state: one multi-step conversation (a workflow) per (chat, user), versioned.

The state lives in ``workflow:<chat>:<user>`` as JSON, so it survives restarts and is seen by
every process: ``{"v": N, "name", "step", "data", "chat_id", "user_id", "expires_at_ms",
"revision"}``. ``v`` is the version of the named conversation's shape (its steps and ``data``),
which the owning app declares with a ``WorkflowKind``; a value without ``v`` was written before
workflows had versions and is version 1. A deploy that changes a conversation's shape bumps its
version and gives a migration from the previous one: a workflow stored by the previous build is
migrated when it is read (and written back by compare-and-set), never dropped. One whose version
the reader cannot read (a newer build wrote it, or a migration refuses it) comes back
``unreadable``, with no data: the conversation tells the user to start again and finishes it.

An expired workflow is still returned for a grace period with ``expired=True``, so that a
handler can tell the user to start again instead of silently ignoring the message. Every change
is a compare-and-set on the stored value: two messages racing on one workflow cannot both
advance it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from telegram_bot.errors import WorkflowError
from telegram_bot.state.base import KVStore

log = logging.getLogger(__name__)
GRACE_MS = 24 * 3600 * 1000

Migration = Callable[[str, dict[str, Any]], tuple[str, dict[str, Any]]]
"""(step, data) of version N -> (step, data) of version N + 1; raises ValueError (or KeyError,
TypeError) for a value it cannot read."""


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class WorkflowKind:
    """A conversation of an app: its name, the version of its shape, and ``migrations[N]``
    from each older version N to N + 1."""

    name: str
    version: int = 1
    migrations: Mapping[int, Migration] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.version < 1:
            raise ValueError("a workflow's version starts at 1")
        if any(not 1 <= old < self.version for old in self.migrations):
            raise ValueError(f"{self.name}: a migration from a version it does not precede")


@dataclass(frozen=True)
class Workflow:
    chat_id: int
    user_id: int
    name: str
    step: str
    expires_at_ms: int
    revision: int = 1
    data: dict[str, Any] = field(default_factory=dict)
    version: int = 1
    unreadable: bool = False  # its version is one this build cannot read: start again
    # The value as stored: what compare-and-set expects when this workflow changes.
    stored: Any = field(default=None, compare=False, repr=False)

    @property
    def expired(self) -> bool:
        return _now_ms() >= self.expires_at_ms


class WorkflowStore:
    """The workflows of the ``kinds`` an app owns (``start`` takes only those; ``get``
    migrates those, and returns any other app's workflow as stored)."""

    def __init__(self, store: KVStore, *kinds: WorkflowKind) -> None:
        self.store = store
        self.kinds = {kind.name: kind for kind in kinds}

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
        workflow = self._new(chat_id, user_id, name, step, ttl_ms, data)
        self.store.set(self.key(chat_id, user_id), workflow.stored, ttl_ms + GRACE_MS)
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
        workflow = self._new(chat_id, user_id, name, step, ttl_ms, data)
        key = self.key(chat_id, user_id)
        raw = self.store.get(key)
        current = self._read(raw)
        if current is not None and not current.expired and not ours(current):
            return None
        if not self.store.compare_and_set(key, raw, workflow.stored, ttl_ms + GRACE_MS):
            return None
        return workflow

    def get(self, *, chat_id: int, user_id: int) -> Workflow | None:
        """The user's workflow in this chat (possibly ``expired`` or ``unreadable``), or None.
        One of this store's kinds stored by an older version is migrated and written back."""
        key = self.key(chat_id, user_id)
        raw = self.store.get(key)
        workflow = self._read(raw)
        if workflow is None or workflow.unreadable or workflow.stored is raw:
            return workflow
        # Migrated: written back unless it changed meanwhile (then the next change, a
        # compare-and-set from the value read, finds it changed).
        remaining = max(1, workflow.expires_at_ms - _now_ms()) + GRACE_MS
        if self.store.compare_and_set(key, raw, workflow.stored, remaining):
            return workflow
        return replace(workflow, stored=raw)

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
        if workflow.unreadable:
            raise WorkflowError(f"workflow {workflow.name} of unreadable version")
        expires = _now_ms() + ttl_ms if ttl_ms is not None else workflow.expires_at_ms
        moved = _stored(
            replace(
                workflow,
                step=step,
                revision=workflow.revision + 1,
                expires_at_ms=expires,
                data=dict(workflow.data if data is None else data),
            )
        )
        remaining = max(1, expires - _now_ms()) + GRACE_MS
        key = self.key(workflow.chat_id, workflow.user_id)
        if not self.store.compare_and_set(key, _expected(workflow), moved.stored, remaining):
            raise WorkflowError("workflow changed concurrently")
        return moved

    def finish(self, workflow: Workflow) -> bool:
        """End the workflow if it is still the one read; say whether this call ended it."""
        key = self.key(workflow.chat_id, workflow.user_id)
        # A tombstone with a short TTL wins the race against a concurrent advance().
        return self.store.compare_and_set(key, _expected(workflow), {"finished": True}, 1000)

    def cancel(self, *, chat_id: int, user_id: int) -> None:
        self.store.delete(self.key(chat_id, user_id))

    def _new(
        self,
        chat_id: int,
        user_id: int,
        name: str,
        step: str,
        ttl_ms: int,
        data: dict[str, Any] | None,
    ) -> Workflow:
        kind = self.kinds.get(name)
        if kind is None:
            raise ValueError(f"workflow {name!r} is not one of this store's kinds")
        if ttl_ms <= 0:
            raise WorkflowError("workflow ttl must be positive")
        workflow = Workflow(
            chat_id=chat_id,
            user_id=user_id,
            name=name,
            step=step,
            expires_at_ms=_now_ms() + ttl_ms,
            data=dict(data or {}),
            version=kind.version,
        )
        return _stored(workflow)

    def _read(self, raw: Any) -> Workflow | None:
        """The stored value as a Workflow of the current version of its kind (``stored`` is
        ``raw`` unless it was migrated); None for what is no workflow (a tombstone)."""
        if not isinstance(raw, dict) or "name" not in raw:
            return None
        version = raw.get("v", 1)
        fields = {name: raw[name] for name in _STORED_FIELDS if name in raw}
        try:
            workflow = Workflow(**fields, stored=raw)
        except TypeError:  # a field is missing
            return None
        unknown = set(raw) - _STORED_FIELDS - {"v"}  # a newer build's fields
        if (
            type(version) is not int
            or version < 1
            or unknown
            or not isinstance(workflow.data, dict)
        ):
            return self._unreadable(workflow, version)
        workflow = replace(workflow, version=version)
        kind = self.kinds.get(workflow.name)
        if kind is None or version == kind.version:
            return workflow
        if version > kind.version:
            return self._unreadable(workflow, version)
        step, data = workflow.step, workflow.data
        try:
            for old in range(version, kind.version):
                step, data = kind.migrations[old](step, dict(data))
        except (KeyError, ValueError, TypeError) as exc:
            log.warning("workflow %s v%s cannot be migrated: %r", workflow.name, version, exc)
            return self._unreadable(workflow, version)
        return _stored(replace(workflow, step=step, data=data, version=kind.version))

    def _unreadable(self, workflow: Workflow, version: Any) -> Workflow:
        log.warning("workflow %s of version %r is not readable here", workflow.name, version)
        return replace(workflow, data={}, unreadable=True)


_STORED_FIELDS = {"chat_id", "user_id", "name", "step", "expires_at_ms", "revision", "data"}


def _stored(workflow: Workflow) -> Workflow:
    """``workflow`` with ``stored`` set to the value it is written as."""
    value = {
        "v": workflow.version,
        "chat_id": workflow.chat_id,
        "user_id": workflow.user_id,
        "name": workflow.name,
        "step": workflow.step,
        "expires_at_ms": workflow.expires_at_ms,
        "revision": workflow.revision,
        "data": workflow.data,
    }
    return replace(workflow, stored=value)


def _expected(workflow: Workflow) -> Any:
    return workflow.stored if workflow.stored is not None else _stored(workflow).stored
