"""Per-process liveness: ``live:<process id>`` in the KV store, kept fresh by a heartbeat thread.

An update's claim names the process holding it (``{"s": "claim", "o": <claim>, "p": <process>}``).
While the process runs, a heartbeat thread rewrites its liveness key every third of
``UPDATE_LIVENESS_TTL_SECONDS`` (10 s); once the process is gone (killed, crashed, its machine
lost) the key expires within that TTL, and a claimant that finds the key gone may take the claim
over with compare-and-set (``idempotency.take_over``) instead of answering 503 until the claim's
own TTL (``UPDATE_CLAIM_TTL_SECONDS``, 90 s) runs out.

The heartbeat also keeps the claims of the updates still being handled (``held``): one older
than a third of its TTL has its TTL renewed by compare-and-set, so a handler slower than
``UPDATE_CLAIM_TTL_SECONDS`` (a few Telegram calls of up to 55 s each) keeps its update, and a
re-delivery meanwhile is answered ``in_progress`` instead of running it a second time.

A release that failed (``owe_release``: the store did not answer when the update was given up
with a 503) is retried by the heartbeat every ``RELEASE_RETRY_SECONDS`` until the store answers:
a claim left in place (the claim's write may even run late, when a hung Redis resumes) would
answer the update's re-delivery ``in_progress`` until its TTL, its owner being alive.

The heartbeat is a thread of its own, so a slow handler (waiting on Telegram) does not stop it:
only a whole process frozen for longer than the TTL (SIGSTOP, a stalled VM) is taken for dead,
the trade-off of every lease, and the process logs it when it wakes. A process beats into a
store only while claims it made there may still be held (``UPDATE_CLAIM_TTL_SECONDS`` after its
last claim) and never into a store that was closed or dropped, so an idle process and a test's
throw-away store cost nothing.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
import uuid
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connections

from telegram_bot.processes import this_pid
from telegram_bot.redaction import redact
from telegram_bot.state import KVStore

log = logging.getLogger(__name__)
_PROCESS_ID_RE = re.compile(r"^[0-9a-f]{32}$")
# How often an owed release is tried again (``owe_release``), and how many are kept at most.
RELEASE_RETRY_SECONDS = 1.0
MAX_OWED = 10_000


def liveness_key(process_id: str) -> str:
    return f"live:{process_id}"


def ttl_seconds() -> float:
    return float(settings.UPDATE_LIVENESS_TTL_SECONDS)


def _beat_seconds() -> float:
    """How often the heartbeat runs: a third of the shorter of the liveness TTL and the claim
    TTL (the claims it renews)."""
    return min(ttl_seconds(), float(settings.UPDATE_CLAIM_TTL_SECONDS)) / 3


def is_process_id(value: object) -> bool:
    return isinstance(value, str) and _PROCESS_ID_RE.match(value) is not None


def alive(store: KVStore, process_id: str) -> bool:
    """Whether the process that wrote ``process_id`` into a claim still beats in ``store``."""
    return store.get(liveness_key(process_id)) is not None


@dataclass
class _Held:
    """A claim this process holds while its update is handled."""

    store: weakref.ref[KVStore]
    key: str
    claim: dict[str, Any]
    renewed: float  # monotonic time the claim's TTL was last set


@dataclass
class _Owed:
    """A claim to give up that the store did not answer about (``owe_release``)."""

    store: weakref.ref[KVStore]
    key: str
    claim: dict[str, Any]
    until: float  # monotonic: the claim has expired by then
    answered: bool = False  # a try was answered (and found another value there)


@dataclass
class _Beat:
    store: weakref.ref[KVStore]
    until: float  # monotonic: beat until then (the last claim's TTL)
    last_ok: float  # monotonic time of the last successful write


class Liveness:
    """This process's identity and heartbeat (one per process: see ``current()``)."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.process_id = uuid.uuid4().hex
        self._lock = threading.Lock()
        self._beats: dict[int, _Beat] = {}
        self._held: dict[int, _Held] = {}  # by a token of the holding call
        self._owed: list[_Owed] = []
        self._thread: threading.Thread | None = None
        self._stopped = threading.Event()
        self._wake = threading.Event()

    def hold(self, store: KVStore) -> str:
        """The process id a new claim in ``store`` names; its liveness key is written now
        unless a recent beat wrote it, and kept fresh for as long as that claim can live."""
        now = time.monotonic()
        hold_for = float(settings.UPDATE_CLAIM_TTL_SECONDS)
        with self._lock:
            beat = self._beats.get(id(store))
            if beat is None or beat.store() is not store:
                beat = _Beat(store=weakref.ref(store), until=0.0, last_ok=float("-inf"))
                self._beats[id(store)] = beat
            beat.until = max(beat.until, now + hold_for)
            fresh = now - beat.last_ok < ttl_seconds() / 2
            self._start()
        if not fresh:
            self._write(store, beat, now)  # raises when the store is unavailable: no claim then
        return self.process_id

    @contextmanager
    def held(self, store: KVStore, key: str, claim: dict[str, Any]) -> Iterator[None]:
        """While the block runs, ``claim`` (at ``key``, just written with its full TTL) is
        renewed by the heartbeat, and the heartbeat goes on."""
        token = id(claim)
        with self._lock:
            self._held[token] = _Held(weakref.ref(store), key, claim, time.monotonic())
        try:
            yield
        finally:
            with self._lock:
                self._held.pop(token, None)

    def owe_release(self, store: KVStore, key: str, claim: dict[str, Any]) -> None:
        """Give up ``claim`` at ``key`` (deleted if it still holds it) from the heartbeat, as
        soon as ``store`` answers: the caller's own try failed.

        A try answered False twice is dropped: the key holds another value (done, another
        claim), and a write of the claim that waited in a hung store has run by the second
        answer (a resumed Redis serves its sockets' waiting commands first)."""
        until = time.monotonic() + float(settings.UPDATE_CLAIM_TTL_SECONDS)
        with self._lock:
            if len(self._owed) >= MAX_OWED:
                log.warning("%d releases owed: the oldest is left to its TTL", MAX_OWED)
                self._owed.pop(0)
            self._owed.append(_Owed(weakref.ref(store), key, claim, until))
            self._start()
        self._wake.set()

    def _start(self) -> None:
        """The heartbeat thread, started if it is not running (call holding the lock)."""
        if self._thread is None:
            self._stopped.clear()
            self._thread = threading.Thread(target=self._run, name="tgcp-liveness", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Stop beating and forget the liveness keys (a clean shutdown; tests)."""
        with self._lock:
            beats, self._beats = list(self._beats.values()), {}
            thread, self._thread = self._thread, None
            self._owed = []
        self._stopped.set()
        self._wake.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=10)
        for beat in beats:
            store = beat.store()
            if store is not None:
                try:
                    store.delete(liveness_key(self.process_id))
                except Exception as exc:  # it expires on its own
                    log.info("liveness key not deleted: %s", redact(str(exc)))

    def _write(self, store: KVStore, beat: _Beat, now: float) -> None:
        ttl = ttl_seconds()
        if beat.last_ok != float("-inf") and now - beat.last_ok > ttl:
            log.warning(
                "process %s was not seen alive for %.0f s (over the %.0f s liveness TTL): "
                "updates it had claimed may have been taken over by another worker",
                self.process_id,
                now - beat.last_ok,
                ttl,
            )
        store.set(liveness_key(self.process_id), {"pid": self.pid}, ttl_ms=max(1, int(ttl * 1000)))
        beat.last_ok = now

    def _run(self) -> None:
        try:
            next_beat = time.monotonic() + _beat_seconds()
            while True:
                self._wake.wait(self._pause(next_beat))
                self._wake.clear()
                if self._stopped.is_set():
                    return
                self._retry_releases()
                if time.monotonic() >= next_beat:
                    if not self._tick():
                        return
                    next_beat = time.monotonic() + _beat_seconds()
        finally:
            connections.close_all()  # this thread's own database connections, if any

    def _pause(self, next_beat: float) -> float:
        """Until the next beat, or the next retry of an owed release if that comes first."""
        left = max(0.0, next_beat - time.monotonic())
        with self._lock:
            return min(left, RELEASE_RETRY_SECONDS) if self._owed else left

    def _retry_releases(self) -> None:
        """Try the owed releases once more (``owe_release``)."""
        now = time.monotonic()
        with self._lock:
            self._owed = [o for o in self._owed if o.until > now and o.store() is not None]
            owed = list(self._owed)
        settled, silent = [], set()
        for entry in owed:
            store = entry.store()
            if store is None or id(store) in silent:
                continue
            try:
                released = store.delete_if_equal(entry.key, entry.claim)
            except Exception as exc:  # still not answering: its others wait for the next retry
                log.info("owed release of %s not done yet: %s", entry.key, redact(str(exc)))
                silent.add(id(store))
                continue
            if released or entry.answered:
                settled.append(entry)
            entry.answered = True
        if owed:
            connections.close_all()
        gone = {id(entry) for entry in settled}
        with self._lock:
            self._owed = [entry for entry in self._owed if id(entry) not in gone]

    @staticmethod
    def _renew(held: _Held, now: float, claim_ttl: float) -> None:
        """The claim's TTL set again, if the claim is still this one (compare-and-set)."""
        store = held.store()
        if store is None:
            return
        try:
            store.compare_and_set(held.key, held.claim, held.claim, int(claim_ttl * 1000))
            held.renewed = now
        except Exception as exc:  # the next beat tries again
            log.warning("claim renewal failed: %s", redact(str(exc)))
        finally:
            connections.close_all()

    def _tick(self) -> bool:
        """Beat every store still held; False (and the thread ends) when none is left."""
        now = time.monotonic()
        claim_ttl = float(settings.UPDATE_CLAIM_TTL_SECONDS)
        with self._lock:
            holding = {id(held.store()) for held in self._held.values()}
            for key, beat in list(self._beats.items()):
                if beat.store() is None or (now > beat.until and key not in holding):
                    del self._beats[key]
            if not self._beats and not self._owed:
                self._thread = None
                return False
            beats = list(self._beats.values())
            due = [held for held in self._held.values() if now - held.renewed > claim_ttl / 3]
        for held in due:
            self._renew(held, now, claim_ttl)
        for beat in beats:
            store = beat.store()
            if store is None:
                continue
            try:
                self._write(store, beat, now)
            except Exception as exc:  # the next beat tries again
                log.warning("liveness beat failed: %s", redact(str(exc)))
            finally:
                connections.close_all()
        return True


_current: Liveness | None = None
_current_lock = threading.Lock()


def current() -> Liveness:
    """This process's liveness; a forked child gets its own identity and thread."""
    global _current
    live = _current
    if live is not None and live.pid == this_pid():
        return live  # the common case, without the lock
    with _current_lock:
        if _current is None or _current.pid != os.getpid():
            _current = Liveness()
        return _current
