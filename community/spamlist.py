"""Spam lists: is a new member a known spam account?

Two checkers, asked in order, the first "listed" winning:

- the local list (``SpamListEntry``, imported by ``manage.py import_spamlist`` from a file of
  user ids): one indexed query;
- a spam-check service at ``SPAMCHECK_URL`` in the shape of CAS's public API
  (``GET <url>?user_id=N`` answering ``{"ok": true, ...}`` for a listed account and
  ``{"ok": false, ...}`` otherwise), asked within ``SPAMCHECK_TIMEOUT_MS`` per phase of the
  request (connect, write, read, pool), its answers kept ``SPAMCHECK_CACHE_SECONDS`` per
  process. A service that does not answer in time, answers an error or something else than
  that shape gives no verdict: with ``SPAMCHECK_FAIL_OPEN`` (the default) the member is let
  in, without it they count as listed.

The check runs on the webhook's path of a join (``services.members``), so the budget bounds
what a slow service costs a join; an answer is cached, so a member's re-delivered join or its
``chat_member`` twin does not ask again.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Protocol

import httpx
from cachetools import TTLCache
from django.conf import settings

from community.models import SpamListEntry

log = logging.getLogger(__name__)

LOCAL, SERVICE = "local", "service"
MAX_ANSWER_BYTES = 64 * 1024
CACHE_SIZE = 10_000


@dataclass(frozen=True)
class Verdict:
    """``listed``: True / False, or None when the checker could not tell."""

    listed: bool | None
    source: str = ""
    reason: str = ""


UNKNOWN = Verdict(None)
CLEAN = Verdict(False)


class Checker(Protocol):
    def check(self, user_id: int) -> Verdict: ...


class LocalList:
    """The accounts an operator imported."""

    def check(self, user_id: int) -> Verdict:
        row = SpamListEntry.objects.filter(user_id=user_id).values_list("source", "reason").first()
        if row is None:
            return CLEAN
        source, reason = row
        return Verdict(True, source or LOCAL, reason)


class ServiceList:
    """A CAS-shaped HTTP service; its definite answers cached per process."""

    def __init__(self, url: str, timeout_ms: int, cache_seconds: int) -> None:
        self.url = url
        self.timeout = httpx.Timeout(timeout_ms / 1000)
        self.cache: TTLCache[int, Verdict] | None = (
            TTLCache(maxsize=CACHE_SIZE, ttl=cache_seconds) if cache_seconds else None
        )
        self.lock = threading.Lock()

    def check(self, user_id: int) -> Verdict:
        if self.cache is not None:
            with self.lock:
                cached = self.cache.get(user_id)
            if cached is not None:
                return cached
        verdict = self._ask(user_id)
        if verdict.listed is not None and self.cache is not None:
            with self.lock:
                self.cache[user_id] = verdict
        return verdict

    def _ask(self, user_id: int) -> Verdict:
        try:
            response = httpx.get(
                self.url,
                params={"user_id": str(user_id)},
                timeout=self.timeout,
                follow_redirects=False,
                headers={"Accept": "application/json"},
            )
        except httpx.HTTPError as exc:
            log.warning("spam check: no answer for %s: %s", user_id, type(exc).__name__)
            return UNKNOWN
        if response.status_code != 200 or len(response.content) > MAX_ANSWER_BYTES:
            log.warning("spam check: HTTP %s for %s", response.status_code, user_id)
            return UNKNOWN
        try:
            answer = response.json()
        except ValueError:
            log.warning("spam check: an answer that is not JSON for %s", user_id)
            return UNKNOWN
        ok = answer.get("ok") if isinstance(answer, dict) else None
        if ok is True:
            return Verdict(True, SERVICE, _service_reason(answer.get("result")))
        if ok is False:
            return CLEAN
        log.warning('spam check: an answer without a boolean "ok" for %s', user_id)
        return UNKNOWN


def _service_reason(result: object) -> str:
    """CAS's ``result`` holds ``offenses`` and ``time_added``; anything else is left out."""
    if isinstance(result, dict) and type(result.get("offenses")) is int:
        return f"offenses: {result['offenses']}"
    return ""


_service: ServiceList | None = None
_service_key: tuple[str, int, int] | None = None
_service_lock = threading.Lock()


def service() -> ServiceList | None:
    """The service checker of the current settings (None without ``SPAMCHECK_URL``)."""
    global _service, _service_key
    key = (settings.SPAMCHECK_URL, settings.SPAMCHECK_TIMEOUT_MS, settings.SPAMCHECK_CACHE_SECONDS)
    if not key[0]:
        return None
    with _service_lock:
        if _service is None or _service_key != key:
            _service, _service_key = ServiceList(*key), key
        return _service


def check(user_id: int) -> Verdict:
    """The verdict on one account: listed locally, listed by the service, clean, or (the
    service silent and ``SPAMCHECK_FAIL_OPEN`` off) listed for want of an answer."""
    local = LocalList().check(user_id)
    if local.listed:
        return local
    checker = service()
    if checker is None:
        return CLEAN
    verdict = checker.check(user_id)
    if verdict.listed is None:
        if settings.SPAMCHECK_FAIL_OPEN:
            return CLEAN
        return Verdict(True, SERVICE, "the spam check did not answer (fail closed)")
    return verdict
