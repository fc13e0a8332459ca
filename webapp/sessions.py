"""The Mini App's own sessions: bound to a Telegram user id, never a Django staff session.

A session is opened by a checked ``initData`` or Login Widget answer (``webapp.auth``) and
lives in the KV state (``miniapp:s:<SHA-256 of the token>``, ``MINIAPP_SESSION_SECONDS``); the
browser holds the token in its own cookie (``tgapp_session``), which no other part of the
site reads. Django's ``request.session`` and ``request.user`` are never touched, so a Mini App
login neither creates nor reuses a staff session, and a staff cookie opens nothing here.

Replays: each accepted proof (the data's hash) is remembered (``miniapp:seen:<hash>``) by an
atomic ``set_if_absent`` for as long as that data could still be accepted; a second login with
the same data is refused, whichever web node receives it.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from dataclasses import dataclass
from typing import Literal

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from telegram_bot.login_throttle import client_ip
from telegram_bot.state import KVStore, get_store
from webapp.auth import CLOCK_SKEW_SECONDS, AuthError, TelegramIdentity

COOKIE = "tgapp_session"
SCHEMA = 1
LANGUAGES = ("en", "ru")


@dataclass(frozen=True)
class AppSession:
    user_id: int
    name: str
    language: str
    expires: int  # unix time
    token_hash: str


def session_open(identity: TelegramIdentity, *, store: KVStore | None = None) -> str:
    """A new session for ``identity``; its token (for the cookie). ``AuthError`` when the proof
    was used before."""
    store = store or get_store()
    seen_ms = (settings.MINIAPP_AUTH_MAX_AGE_SECONDS + 2 * CLOCK_SKEW_SECONDS) * 1000
    proof = hashlib.sha256(identity.proof.lower().encode()).hexdigest()
    if not store.set_if_absent(f"miniapp:seen:{proof}", 1, ttl_ms=seen_ms):
        raise AuthError("this login was already used: open the app again")
    token = secrets.token_urlsafe(32)
    seconds = settings.MINIAPP_SESSION_SECONDS
    language = identity.language_code[:2].lower()
    data = {
        "uid": identity.user_id,
        "name": identity.full_name[:200] or identity.username[:64],
        "lang": language if language in LANGUAGES else "",
        "exp": int(time.time()) + seconds,
    }
    store.set(_key(_hash(token)), {"v": SCHEMA, "d": data}, ttl_ms=seconds * 1000)
    return token


def session_of(request: HttpRequest, *, store: KVStore | None = None) -> AppSession | None:
    """The request's Mini App session, or None (no cookie, unknown, expired)."""
    token = request.COOKIES.get(COOKIE, "")
    if not token or len(token) > 128:
        return None
    token_hash = _hash(token)
    raw = (store or get_store()).get(_key(token_hash))
    if not isinstance(raw, dict) or raw.get("v") != SCHEMA or not isinstance(raw.get("d"), dict):
        return None
    data = raw["d"]
    if int(data.get("exp", 0)) < time.time():
        return None
    return AppSession(
        user_id=int(data["uid"]),
        name=str(data.get("name", "")),
        language=str(data.get("lang", "")),
        expires=int(data["exp"]),
        token_hash=token_hash,
    )


def session_close(request: HttpRequest, response: HttpResponse) -> None:
    token = request.COOKIES.get(COOKIE, "")
    if token and len(token) <= 128:
        get_store().delete(_key(_hash(token)))
    response.delete_cookie(COOKIE, path="/app/", samesite=_same_site())


def set_cookie(request: HttpRequest, response: HttpResponse, token: str) -> None:
    """The session cookie: HttpOnly, for /app/ only. Inside Telegram's web client the app runs
    in a frame of web.telegram.org, so over https the cookie is SameSite=None (and Secure);
    CSRF tokens protect every change either way."""
    response.set_cookie(
        COOKIE,
        token,
        max_age=settings.MINIAPP_SESSION_SECONDS,
        path="/app/",
        httponly=True,
        secure=request.is_secure() or settings.SESSION_COOKIE_SECURE,
        samesite=_same_site(request),
    )


def over_limit(request: HttpRequest, what: str, per_minute: int, who: str = "") -> bool:
    """Count one attempt of ``what`` by ``who`` (default: the client address) in this minute;
    True once more than ``per_minute`` were made."""
    who = who or (client_ip(request) or "unknown")
    minute = int(time.time() // 60)
    key = f"miniapp:rl:{what}:{hashlib.sha256(who.encode()).hexdigest()[:32]}:{minute}"
    return get_store().increment(key, 1, ttl_ms=120_000) > per_minute


def _same_site(request: HttpRequest | None = None) -> Literal["None", "Lax"]:
    secure = settings.SESSION_COOKIE_SECURE or (request is not None and request.is_secure())
    return "None" if secure else "Lax"


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _key(token_hash: str) -> str:
    return f"miniapp:s:{token_hash}"
