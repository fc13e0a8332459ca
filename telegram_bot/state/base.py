"""The KV state contract, shared by every backend.

``KVStore`` validates keys, values and TTLs once and encodes values as canonical JSON; the
backends implement the small ``_``-prefixed primitives. Values are JSON (``None`` is refused:
delete the key instead). TTLs are milliseconds and may be under a second. An expired key is
invisible to every operation, scan included.
"""

from __future__ import annotations

import json
import math
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from telegram_bot.state.keys import (
    FALLBACK_FAMILIES,
    MAX_KEY_LENGTH,
    check_key,
    check_not_indexed,
    check_op_key,
    check_prefix,
)

MAX_SCAN_LIMIT = 1000
# While a bot-scoped store's deployment may still hold keys of the unscoped format (the move,
# ``move_state_keys``, has not reported finished), how often it asks whether it has.
MOVED_RECHECK_SECONDS = 10.0
MAX_CURSOR_LENGTH = MAX_KEY_LENGTH + 64  # the last key, plus a backend's own position
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1  # what an integer key can hold on Redis


class InvalidValueError(ValueError):
    """A value or TTL the store cannot keep (None, not JSON, NaN, a bad TTL)."""


@dataclass(frozen=True)
class Increment:
    """Add ``by`` to an integer key (TTL applied when the key is created)."""

    key: str
    by: int = 1
    ttl_ms: int | None = None


@dataclass(frozen=True)
class Put:
    """Store ``value`` at ``key``."""

    key: str
    value: Any
    ttl_ms: int | None = None


Op = Increment | Put


@dataclass(frozen=True)
class Finished:
    """What ``KVStore.claim_or_finish`` did: ``finished`` (its ops and the done value written)
    or not (a trigger met: only the claim written), and the increments' new values."""

    finished: bool
    values: list[int]


@dataclass(frozen=True)
class MemoryStatus:
    """What a KV server that may run out of memory says about it (Redis): its eviction
    policy (None: it would not say) and its memory in use and limit, in bytes (None: it would
    not say; a limit of 0 is none)."""

    policy: str | None
    used_bytes: int | None
    max_bytes: int | None


class RawOp(NamedTuple):
    """An op checked and encoded: ``kind`` is "i" (increment) or "s" (set). A tuple: a
    counted message makes about a dozen, and a frozen dataclass is slower to build."""

    kind: str
    key: str
    arg: str
    ttl_ms: int | None


class RawFinish(NamedTuple):
    """``claim_or_finish``'s arguments checked and encoded, for the backends."""

    key: str
    claim: str
    claim_ttl_ms: int | None
    done: str
    done_ttl_ms: int | None
    increments: list[RawOp]
    triggers: list[int | None]
    marker: str | None  # a raw key, or None for no unit marker
    ops: list[RawOp]
    done_key: str  # a raw key: where ``done`` goes (``key`` unless the caller names another)
    write_marker: bool  # False: the marker is checked, not written (``done`` stands for it)


def compact_json_encoder(*, sort_keys: bool, allow_nan: bool) -> Callable[[Any], str]:
    """``json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=...,
    allow_nan=...)``, as one function built once.

    It calls the standard library's C encoder directly: ``JSONEncoder.encode`` builds a new
    one on every call, and a counted group message encodes a dozen small values. It keeps no
    circular-reference markers: markers shared between calls would keep a container whose
    encoding failed half-way, and call it circular the next time. So a value that contains
    itself (which no JSON text decodes to) raises RecursionError instead of ValueError. Where
    the C encoder is missing (another Python), ``JSONEncoder.encode``."""
    encoder = json.JSONEncoder(
        ensure_ascii=False, separators=(",", ":"), sort_keys=sort_keys, allow_nan=allow_nan
    )
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - CPython has it
        return encoder.encode
    chunks = make(
        None, encoder.default, json.encoder.encode_basestring, None, ":", ",",
        sort_keys, False, allow_nan,
    )  # fmt: skip

    def encode(value: Any) -> str:
        return "".join(chunks(value, 0))

    return encode


_canonical = compact_json_encoder(sort_keys=True, allow_nan=False)


def encode(value: Any) -> str:
    """Canonical JSON: equal values give equal text, which compare_and_set relies on."""
    if value is None:
        raise InvalidValueError("None cannot be stored; delete the key instead")
    try:
        return _canonical(value)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidValueError(f"value is not JSON-serialisable: {exc}") from None


def decode(text: str) -> Any:
    return json.loads(text)


def check_ttl(ttl_ms: object) -> int | None:
    if ttl_ms is None:
        return None
    if isinstance(ttl_ms, bool) or not isinstance(ttl_ms, int):
        raise InvalidValueError(f"ttl_ms must be a positive integer or None, got {ttl_ms!r}")
    if ttl_ms <= 0:
        raise InvalidValueError(f"ttl_ms must be positive, got {ttl_ms}")
    return ttl_ms


class KVStore(ABC):
    """One KV contract; ``prefix`` namespaces every key (two bots, or one test, per prefix)."""

    url: str = ""

    def __init__(self, *, prefix: str = "", bot: int | None = None) -> None:
        """``bot``: the bot's id, written into every key after its family
        (``session:<bot>:<chat>:<user>``), so that several bots share one storage without
        seeing each other's keys; None writes keys as they are named (the unscoped format)."""
        if bot is not None and (type(bot) is not int or bot <= 0):
            raise InvalidValueError(f"a bot id is a positive integer, got {bot!r}")
        self.prefix = prefix
        self.bot = bot
        self._scope = None if bot is None else f"{bot}:"
        # Until the move reports finished (``moved``), a key of FALLBACK_FAMILIES absent from
        # its scoped place is also looked for where the unscoped format kept it.
        self._moved = bot is None
        self._next_moved_check = 0.0

    # --- public contract ---------------------------------------------------------------------
    def get(self, key: str) -> Any | None:
        """The value stored at ``key``, or None when absent or expired."""
        text = self._get(self._raw(check_key(key)))
        if text is None and key.startswith(FALLBACK_FAMILIES) and self._fallback():
            text = self._get(self.prefix + key)
        return None if text is None else decode(text)

    def get_many(self, keys: Sequence[str]) -> list[Any | None]:
        """The values at ``keys`` (None where absent or expired), in one round trip."""
        if isinstance(keys, str) or len(keys) > MAX_SCAN_LIMIT:
            raise InvalidValueError(f"get_many takes a list of at most {MAX_SCAN_LIMIT} keys")
        if not keys:
            return []
        texts = self._get_many([self._raw(check_key(key)) for key in keys])
        if self._scope is not None and not self._moved:
            texts = self._with_unscoped(keys, texts)
        return [None if text is None else decode(text) for text in texts]

    def get_each(self, keys: Sequence[str]) -> list[Any | None]:
        """``get_many`` of any number of keys: one round trip per ``MAX_SCAN_LIMIT`` keys."""
        values: list[Any | None] = []
        for start in range(0, len(keys), MAX_SCAN_LIMIT):
            values += self.get_many(keys[start : start + MAX_SCAN_LIMIT])
        return values

    def set(self, key: str, value: Any, ttl_ms: int | None = None) -> None:
        """Store ``value``; with ``ttl_ms`` it expires after that many milliseconds."""
        self._set(self._raw(check_key(key)), encode(value), check_ttl(ttl_ms))

    def delete(self, key: str) -> None:
        self._delete(self._raw(check_key(key)))
        if key.startswith(FALLBACK_FAMILIES) and self._fallback():  # forgotten at both places
            self._delete(self.prefix + key)

    def compare_and_set(
        self, key: str, expected: Any | None, value: Any, ttl_ms: int | None = None
    ) -> bool:
        """Atomically write ``value`` if the key holds ``expected`` (None: absent or expired)."""
        raw = self._raw(check_key(key))
        text, ttl = encode(value), check_ttl(ttl_ms)
        if expected is None:
            if self._unscoped_holds([key]):
                return False
            return self._set_if_absent(raw, text, ttl)
        return self._replace_if_equal(raw, encode(expected), text, ttl)

    def delete_if_equal(self, key: str, expected: Any) -> bool:
        """Atomically delete the key if it holds ``expected``; say whether it did. Only a
        delete, so a Redis that is full (and refuses writes) still takes it."""
        return self._delete_if_equal(self._raw(check_key(key)), encode(expected))

    def set_if_absent(self, key: str, value: Any, ttl_ms: int | None = None) -> bool:
        """Atomically write ``value`` if the key is absent or expired; say whether it did."""
        raw, text, ttl = self._raw(check_key(key)), encode(value), check_ttl(ttl_ms)
        if self._unscoped_holds([key]):
            return False
        return self._set_if_absent(raw, text, ttl)

    def set_if_absent_and_increment(
        self,
        key: str,
        value: Any,
        ttl_ms: int | None,
        increments: Sequence[Increment],
        *,
        absent_key: str | None = None,
    ) -> list[int] | None:
        """``set_if_absent`` and, in the same atomic step, ``increments``; their new values.

        When ``key`` is absent or expired (and ``absent_key``, if given, too): write ``value``
        and add every increment (its TTL applies when it creates the key), and return the new
        values in order. When ``key`` (or ``absent_key``) holds a value: None, and nothing is
        written. An increment of a key that holds no integer raises StateError and nothing at
        all is written; an indexed key is refused. (The update path's claim with the counters
        its observers take with it: one round trip; ``absent_key`` its done-marker, kept apart
        from the claim.)
        """
        raw = self._raw(check_not_indexed(check_key(key)))
        text, ttl = encode(value), check_ttl(ttl_ms)
        raw_ops = self._encode_increments(increments)
        raw_absent = None if absent_key is None else self._raw(check_key(absent_key))
        if self._unscoped_holds([key] if absent_key is None else [key, absent_key]):
            return None
        if not raw_ops and raw_absent is None:
            return [] if self._set_if_absent(raw, text, ttl) else None
        return self._set_if_absent_and_increment(raw, text, ttl, raw_ops, raw_absent)

    def claim_or_finish(
        self,
        key: str,
        *,
        claim: Any,
        claim_ttl_ms: int | None,
        done: Any,
        done_ttl_ms: int | None,
        increments: Sequence[Increment] = (),
        triggers: Sequence[int | None] = (),
        marker_key: str | None = None,
        ops: Sequence[Op] = (),
        done_key: str | None = None,
        write_marker: bool = True,
    ) -> Finished | None:
        """One atomic step that either finishes the work on ``key`` or claims it.

        When ``key`` is absent or expired, ``done_key`` (if given) too, and ``marker_key`` (if
        given) does not hold ``done``: add every increment (its TTL applies when it creates the
        key), then, unless a new value equals its trigger (``triggers``, one per increment,
        None for none), apply ``ops`` and set ``marker_key`` (unless ``write_marker`` is False:
        then it is only checked) and ``done_key`` (``key`` when not given) to ``done``:
        ``Finished(True, values)``. A value that
        meets its trigger writes ``claim`` at ``key`` instead and applies no op:
        ``Finished(False, values)``, exactly what ``set_if_absent_and_increment`` would have
        done. Otherwise None, and nothing is written. An increment of a key that holds no
        integer raises StateError and nothing at all is written.
        (The update path's whole work for an update whose units are known in advance to do
        nothing but ``ops`` unless a counter reaches a trigger: one round trip.)
        """
        raw = self._raw(check_not_indexed(check_key(key)))
        raw_marker = None
        if marker_key is not None:
            raw_marker = self._raw(check_not_indexed(check_key(marker_key)))
        if len(triggers) != len(increments):
            raise InvalidValueError("claim_or_finish takes one trigger per increment")
        for trigger in triggers:
            if trigger is not None and type(trigger) is not int:
                raise InvalidValueError(f"a trigger is an integer or None, not {trigger!r}")
        step = RawFinish(
            raw,
            encode(claim),
            check_ttl(claim_ttl_ms),
            encode(done),
            check_ttl(done_ttl_ms),
            self._encode_increments(increments),
            list(triggers),
            raw_marker,
            [self._encode_op(op) for op in ops],
            raw if done_key is None else self._raw(check_not_indexed(check_key(done_key))),
            write_marker,
        )
        if self._unscoped_holds(
            [key] if done_key is None else [key, done_key], marker_key, step.done
        ):
            return None
        outcome = self._claim_or_finish(step)
        return None if outcome is None else Finished(*outcome)

    def increment(self, key: str, by: int = 1, ttl_ms: int | None = None) -> int:
        """Atomically add ``by`` (missing or expired counts as 0) and return the new value.

        ``ttl_ms`` applies only when the increment creates the key; it does not extend it.
        """
        if isinstance(by, bool) or not isinstance(by, int):
            raise InvalidValueError(f"increment step must be an integer, got {by!r}")
        return self._increment(self._raw(check_not_indexed(check_key(key))), by, check_ttl(ttl_ms))

    def apply_once(
        self,
        marker_key: str,
        marker_value: Any,
        ops: Sequence[Op],
        marker_ttl_ms: int | None = None,
    ) -> bool:
        """Apply ``ops`` and set ``marker_key`` to ``marker_value``, all in one atomic step,
        unless the marker already holds that value; say whether the ops were applied.

        This is how an effect is made idempotent per update: the ops of update N and the
        "update N done" marker are written together or not at all, so a re-delivered update
        finds the marker and changes nothing. An op that cannot apply (an increment of a key
        that holds no integer) raises StateError and nothing at all is written.
        """
        raw_ops = [self._encode_op(op) for op in ops]
        raw_marker, marker_text = (
            self._raw(check_not_indexed(check_key(marker_key))),
            encode(marker_value),
        )
        if self._unscoped_holds([], marker_key, marker_text):
            return False
        return self._apply_once(
            raw_marker,
            marker_text,
            check_ttl(marker_ttl_ms),
            raw_ops,
        )

    def _encode_increments(self, increments: Sequence[Increment]) -> list[RawOp]:
        """The counters taken with a claim: increments only."""
        raw_ops = []
        for op in increments:
            if not isinstance(op, Increment):
                raise InvalidValueError(f"only increments go with a claim, not {op!r}")
            raw_ops.append(self._encode_op(op))
        return raw_ops

    def _encode_op(self, op: Op) -> RawOp:
        ttl = op.ttl_ms
        if not (ttl is None or (type(ttl) is int and ttl > 0)):
            check_ttl(ttl)  # raises
        if isinstance(op, Increment):
            if type(op.by) is not int:  # not a bool either
                raise InvalidValueError(f"increment step must be an integer, got {op.by!r}")
            if not _INT64_MIN <= op.by <= _INT64_MAX:  # Redis's range, checked before writing
                raise InvalidValueError(f"increment step out of range: {op.by}")
            return RawOp("i", self._raw(check_op_key(op.key)), str(op.by), ttl)
        if isinstance(op, Put):
            return RawOp("s", self._raw(check_op_key(op.key)), encode(op.value), ttl)
        raise InvalidValueError(f"unknown KV op {op!r}")

    def scan(
        self, prefix: str, cursor: str | None = None, limit: int = 100
    ) -> tuple[list[str], str | None]:
        """One page of at most ``limit`` live keys under ``prefix`` and the next cursor.

        Start with ``cursor=None``; the next cursor is None once there is nothing more. Every key
        that stays live and unwritten during the walk is returned at least once. A cursor always
        starts with ``prefix``; one that does not (a hand-edited page link) is refused with
        InvalidValueError, so a scan never walks into another family.
        """
        check_prefix(prefix)
        if (
            isinstance(limit, bool)
            or not isinstance(limit, int)
            or not 1 <= limit <= MAX_SCAN_LIMIT
        ):
            raise InvalidValueError(f"scan limit must be 1-{MAX_SCAN_LIMIT}, got {limit!r}")
        if cursor is not None:
            check_cursor(prefix, cursor)
        raw_keys, next_cursor = self._scan(self._raw(prefix), cursor, limit)
        return [self._logical(key) for key in raw_keys], next_cursor

    def scan_all(self, prefix: str, page_size: int = 500) -> Iterator[str]:
        """Every live key under ``prefix``, page by page."""
        cursor: str | None = None
        while True:
            keys, cursor = self.scan(prefix, cursor, page_size)
            yield from keys
            if cursor is None:
                return

    def ping(self) -> None:
        """Raise StateUnavailableError when the backend does not answer."""
        self._ping()

    def memory_status(self) -> MemoryStatus | None:
        """The server's eviction policy and memory use, where a server may evict keys or run
        out of memory (Redis); None for the backends that never evict (memory, database)."""
        return None

    def purge_expired(self, batch: int = 5000) -> int:
        """Delete expired entries where the backend keeps them (the database); return how many."""
        return 0

    def close(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Release connections held by this store."""

    # --- backend primitives --------------------------------------------------------------------
    def _raw(self, key: str) -> str:
        """Where a checked key (or scan prefix) is kept: ``<prefix><family>:<bot>:<rest>``,
        or ``<prefix><key>`` unscoped."""
        if self._scope is None:
            return self.prefix + key
        family, _, rest = key.partition(":")
        return f"{self.prefix}{family}:{self._scope}{rest}"

    def _logical(self, raw_key: str) -> str:
        """The key a raw key of this store stands for (``_raw``'s inverse)."""
        key = raw_key[len(self.prefix) :]
        if self._scope is None:
            return key
        family, _, rest = key.partition(":")
        return f"{family}:{rest[len(self._scope) :]}"

    # --- the unscoped format beside the scoped one (``STATE_KEYS_BY_BOT``) -------------------
    def moved_flag(self) -> str:
        """The raw name of the flag that says this bot's keys are all scoped (the move has
        finished, or the deployment started scoped): no unscoped done-marker is left."""
        return f"{self.prefix}#moved:{self.bot}"

    def mark_moved(self) -> None:
        """Set the flag: this store and every process that checks it stop the fallback."""
        self._set_flag(self.moved_flag())
        self._moved = True

    def _fallback(self) -> bool:
        """Whether keys of FALLBACK_FAMILIES are also read where the unscoped format kept
        them: scoped, and the flag not seen yet (asked every MOVED_RECHECK_SECONDS)."""
        if self._moved:
            return False
        now = time.monotonic()
        if now < self._next_moved_check:
            return True
        self._next_moved_check = now + MOVED_RECHECK_SECONDS
        if self._get_flag(self.moved_flag()):
            self._moved = True
            return False
        return True

    def _with_unscoped(self, keys: Sequence[str], texts: list[str | None]) -> list[str | None]:
        """``texts`` with the gaps of FALLBACK_FAMILIES keys filled from the unscoped place."""
        gaps = [
            i
            for i, key in enumerate(keys)
            if texts[i] is None and key.startswith(FALLBACK_FAMILIES)
        ]
        if not gaps or not self._fallback():
            return texts
        found = self._get_many([self.prefix + keys[i] for i in gaps])
        texts = list(texts)
        for i, text in zip(gaps, found, strict=True):
            texts[i] = text
        return texts

    def _unscoped_holds(
        self, keys: Sequence[str], marker: str | None = None, marker_text: str | None = None
    ) -> bool:
        """Whether one of ``keys`` (checked) of FALLBACK_FAMILIES holds a value, or ``marker``
        holds ``marker_text``, where the unscoped format kept them, while the fallback is on:
        one read. A condition of an atomic step, read before it: an unscoped key is only ever
        moved to its scoped place (where the step itself looks), never written, so the read
        cannot go stale."""
        if self._moved:
            return False
        wanted: list[tuple[str, str | None]] = [
            (key, None) for key in keys if key.startswith(FALLBACK_FAMILIES)
        ]
        if marker is not None and marker.startswith(FALLBACK_FAMILIES):
            wanted.append((marker, marker_text))
        if not wanted or not self._fallback():
            return False
        found = self._get_many([self.prefix + key for key, _ in wanted])
        return any(
            value is not None and (want is None or value == want)
            for (_, want), value in zip(wanted, found, strict=True)
        )

    def raw_name(self, key: str) -> str:
        """Where this store keeps ``key`` (a key, scan prefix or group name of a family)."""
        return self._raw(key)

    def raw_exists(self, raw_name: str) -> bool:
        """Whether something is kept under the raw name (a key, a group's hash, a flag)."""
        return self._get_flag(raw_name)

    def set_raw_flag(self, raw_name: str) -> None:
        """Keep a flag (no TTL) under a raw name outside the families (``#<name>``)."""
        self._set_flag(raw_name)

    def reads_unscoped(self) -> bool:
        """Whether this store still looks for claims and done-markers where the unscoped
        format kept them (scoped, and the move's flag not seen yet)."""
        return self._fallback()

    def _get_flag(self, raw_name: str) -> bool:
        return self._get(raw_name) is not None

    def _set_flag(self, raw_name: str) -> None:
        self._set(raw_name, "1", None)

    # --- the move of the unscoped format's keys to the scoped one (``move_state_keys``) ------
    def raw_keys(self, raw_prefix: str = "", page: int = 1000) -> Iterator[str]:
        """Every raw key under ``self.prefix + raw_prefix`` as the backend keeps it (Redis: a
        group of packed keys as its one hash, ``<group>#``), any format, page by page."""
        cursor: str | None = None
        while True:
            keys, cursor = self._raw_page(self.prefix + raw_prefix, cursor, page)
            yield from keys
            if cursor is None:
                return

    def move_key(self, raw_from: str, raw_to: str) -> int:
        """Move one key atomically: 0 when ``raw_from`` is gone, 1 renamed (``raw_to`` was
        absent), 2 merged into the ``raw_to`` that traffic wrote meanwhile: integers summed,
        a done or dead marker kept over anything else, else ``raw_to``'s value; the longer
        TTL (none is the longest). ``raw_from`` is gone afterwards."""
        return self._move(raw_from, raw_to)

    def _raw_page(
        self, raw_prefix: str, cursor: str | None, limit: int
    ) -> tuple[list[str], str | None]:
        raise NotImplementedError(f"{type(self).__name__} cannot list its raw keys")

    def _move(self, raw_from: str, raw_to: str) -> int:
        raise NotImplementedError(f"{type(self).__name__} cannot move keys")

    @abstractmethod
    def _get(self, raw_key: str) -> str | None: ...

    def _get_many(self, raw_keys: list[str]) -> list[str | None]:
        """One read per key; backends that can read many at once override this."""
        return [self._get(raw_key) for raw_key in raw_keys]

    @abstractmethod
    def _set(self, raw_key: str, text: str, ttl_ms: int | None) -> None: ...

    @abstractmethod
    def _delete(self, raw_key: str) -> None: ...

    @abstractmethod
    def _delete_if_equal(self, raw_key: str, expected: str) -> bool: ...

    @abstractmethod
    def _set_if_absent(self, raw_key: str, text: str, ttl_ms: int | None) -> bool: ...

    @abstractmethod
    def _replace_if_equal(
        self, raw_key: str, expected: str, text: str, ttl_ms: int | None
    ) -> bool: ...

    @abstractmethod
    def _increment(self, raw_key: str, by: int, ttl_ms: int | None) -> int: ...

    def _set_if_absent_and_increment(
        self,
        raw_key: str,
        text: str,
        ttl_ms: int | None,
        ops: list[RawOp],
        raw_absent: str | None = None,
    ) -> list[int] | None:
        """Every backend has it; only a test's partial store may go without."""
        raise NotImplementedError(f"{type(self).__name__} cannot claim with increments")

    def _claim_or_finish(self, step: RawFinish) -> tuple[bool, list[int]] | None:
        """Every backend has it; only a test's partial store may go without."""
        raise NotImplementedError(f"{type(self).__name__} cannot claim or finish")

    @abstractmethod
    def _scan(
        self, raw_prefix: str, cursor: str | None, limit: int
    ) -> tuple[list[str], str | None]: ...

    @abstractmethod
    def _apply_once(
        self, raw_marker: str, marker_text: str, marker_ttl_ms: int | None, ops: list[RawOp]
    ) -> bool: ...

    @abstractmethod
    def _ping(self) -> None: ...


def check_cursor(prefix: str, cursor: object) -> str:
    """A scan cursor is text that starts with the prefix it continues, and is not too long."""
    if not isinstance(cursor, str):
        raise InvalidValueError("scan cursor must be a string or None")
    if len(cursor) > MAX_CURSOR_LENGTH:
        raise InvalidValueError(f"scan cursor longer than {MAX_CURSOR_LENGTH} characters")
    if not cursor.startswith(prefix):
        raise InvalidValueError(f"scan cursor {cursor[:80]!r} does not continue {prefix!r}")
    return cursor


# The values a merge keeps over the other side's (``KVStore.move_key``): an update's final markers.
FINAL_TEXTS = (encode({"s": "done"}), encode({"s": "dead"}))


def merged_text(old: str, new: str) -> str:
    """The value of a key that both formats hold (``KVStore.move_key``): two integers summed,
    a final marker kept over anything else, else the scoped (newer) value."""
    if is_integer_text(old) and is_integer_text(new):
        return str(int(old) + int(new))
    if old in FINAL_TEXTS and new not in FINAL_TEXTS:
        return old
    return new


def met_trigger(values: Sequence[int], triggers: Sequence[int | None]) -> bool:
    """Whether a counter's new value equals its trigger (``claim_or_finish``)."""
    return any(t is not None and v == t for v, t in zip(values, triggers, strict=True))


def prefix_successor(prefix: str) -> str:
    """The smallest string greater than every string starting with ``prefix``."""
    last = prefix[-1]
    return prefix[:-1] + chr(ord(last) + 1)


def is_integer_text(text: str) -> bool:
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return isinstance(value, int) and not isinstance(value, bool) and math.isfinite(value)
