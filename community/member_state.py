"""KV state of members joining and leaving (``members:``) and of captcha challenges (``cap:``).

``members:m:<chat>:<user>`` is the member's current *stay*: ``{"in": bool, "date": unix time
of the event that set it, "stay": random id of this stay, "welcomed": bool, "cap": captcha
token or "", "removed": bool (by the anti-raid)}``. Every join or leave is a compare-and-set
on it, so:

- a join and the ``new_chat_members`` service message of the same join (Telegram sends both
  when the bot is an admin and receives ``chat_member``), and a re-delivered update, find the
  member already "in": one stay, counted once, challenged once, welcomed once;
- an event older than the stored one (a join re-delivered after the member left) changes
  nothing.

``cap:<token>`` is one challenge: who must answer, the right button, the message, the outcome.
The token (12 URL-safe characters, 72 random bits from ``secrets``) is what the buttons carry:
callback data cannot be forged from the chat and user ids. The outcome is set once, by
compare-and-set from "pending"; only the writer that won performs it.

``members:j:<chat>:<window>`` counts joins per anti-raid window; ``members:strict:<chat>``
holds the strict mode (``Strict``, TTL: its duration); ``members:rn:<chat>`` the last notice
of the "join requests only" mode (when, which message); ``members:w:<chat>`` the last
welcome's message id.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

from telegram_bot.state import KVStore

STAY_TTL_MS = 7 * 24 * 3600 * 1000  # beyond Telegram's 24 h of re-deliveries
CHALLENGE_TTL_MS = 2 * 24 * 3600 * 1000
TOKEN_BYTES = 9
_CAS_ATTEMPTS = 20

PENDING = "pending"
PASSED = "passed"
FAILED = "failed"  # a wrong button
TIMEOUT = "timeout"
LEFT = "left"  # the member left before answering


def stay_key(chat_id: int, user_id: int) -> str:
    return f"members:m:{chat_id}:{user_id}"


def challenge_key(token: str) -> str:
    return f"cap:{token}"


@dataclass(frozen=True)
class Stay:
    inside: bool
    date: int
    stay: str
    welcomed: bool = False
    cap: str = ""
    removed: bool = False  # by the anti-raid "join requests only" mode: no goodbye
    # The update of the last join or leave: Telegram's dates are whole seconds, and a member
    # removed by the captcha can join again within the same one (update ids are in order).
    update: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "in": self.inside,
            "date": self.date,
            "upd": self.update,
            "stay": self.stay,
            "welcomed": self.welcomed,
            "cap": self.cap,
            "removed": self.removed,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Stay:
        return cls(
            inside=bool(data["in"]),
            date=int(data["date"]),
            stay=str(data["stay"]),
            welcomed=bool(data.get("welcomed")),
            cap=str(data.get("cap") or ""),
            removed=bool(data.get("removed")),
            update=int(data.get("upd") or 0),
        )

    def before(self, date: int, update_id: int) -> bool:
        """Whether this stay's last event came before the event at ``date`` (update
        ``update_id``): by date, and within one second by update id when both are known."""
        if date != self.date:
            return self.date < date
        return bool(update_id and self.update) and self.update < update_id

    def after(self, date: int, update_id: int) -> bool:
        """Whether this stay's last event came after the event at ``date`` (as ``before``)."""
        if date != self.date:
            return self.date > date
        return bool(update_id and self.update) and self.update > update_id


@dataclass(frozen=True)
class Transition:
    """The outcome of a join or leave event: the stay after it, and whether it changed it."""

    stay: Stay | None
    changed: bool


@dataclass(frozen=True)
class Challenge:
    token: str
    chat_id: int
    user_id: int
    stay: str
    user: dict[str, Any]  # the member as Telegram described them (for the welcome)
    chat_title: str
    choices: list[str]
    answer: int
    deadline: int  # unix seconds
    status: str = PENDING
    restricted: bool = False
    message_id: int | None = None
    finished: bool = False  # the outcome's Telegram calls are done
    decided_at: float = 0.0  # unix time the outcome was set
    finisher: str = ""  # who carries the outcome out: "webhook" (a press, a leave) or "job"
    # The restriction the member arrived with (a moderator's mute survives leaving), given
    # back instead of every permission when the captcha ends: {"permissions": {...},
    # "until": unix seconds, 0 for good}. None: they arrived unrestricted.
    restore: dict[str, Any] | None = None
    # The captcha's own restriction was taken off (a pass, a lift at a leave, the removal's
    # ban and unban): else a later join arrives "restricted" by it, not by a moderator.
    lifted: bool = False

    @property
    def pending(self) -> bool:
        return self.status == PENDING

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Challenge:
        return cls(**data)


@dataclass(frozen=True)
class Strict:
    """The anti-raid strict mode of a chat: since when, until when, what it does (``captcha``
    for everyone, or ``requests``: join requests only, through ``link``)."""

    since: int
    until: int = 0  # unix seconds; 0 in records of versions up to 0.2 (captcha mode)
    mode: str = "captcha"
    link: str = ""  # the invite link that creates join requests ("requests" mode)
    link_failed: bool = False  # Telegram refused the link for good: captcha instead

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Any) -> Strict | None:
        if not isinstance(data, dict):
            return None
        try:
            return cls(**data)
        except TypeError:
            return None


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


class MemberStore:
    def __init__(self, store: KVStore) -> None:
        self.store = store

    # -- stays ----------------------------------------------------------------------------

    def get_stay(self, chat_id: int, user_id: int) -> Stay | None:
        data = self.store.get(stay_key(chat_id, user_id))
        return Stay.from_json(data) if data is not None else None

    def joined(self, chat_id: int, user_id: int, date: int, update_id: int = 0) -> Transition:
        """Record a join at ``date`` (update ``update_id``): changed only when the member was
        not in (or unknown) and the event is newer than the leave we know."""

        def change(current: Stay | None) -> Stay | None:
            if current is not None and (current.inside or not current.before(date, update_id)):
                return None
            return Stay(inside=True, date=date, stay=new_token(), update=update_id)

        return self._transition(chat_id, user_id, change)

    def left(self, chat_id: int, user_id: int, date: int, update_id: int = 0) -> Transition:
        """Record a leave at ``date`` (update ``update_id``): changed only when the member was
        in (or unknown) and the event is not older than their join."""

        def change(current: Stay | None) -> Stay | None:
            if current is not None and (not current.inside or current.after(date, update_id)):
                return None
            previous = current or Stay(inside=True, date=date, stay=new_token())
            return replace(previous, inside=False, date=date, update=update_id)

        return self._transition(chat_id, user_id, change)

    def update_stay(
        self, chat_id: int, user_id: int, change: Callable[[Stay], Stay | None]
    ) -> Stay | None:
        """Apply ``change`` to the stay (None from it: no change); the stay written, or None."""

        def wrapped(current: Stay | None) -> Stay | None:
            return change(current) if current is not None else None

        result = self._transition(chat_id, user_id, wrapped)
        return result.stay if result.changed else None

    def _transition(
        self, chat_id: int, user_id: int, change: Callable[[Stay | None], Stay | None]
    ) -> Transition:
        key = stay_key(chat_id, user_id)
        for _ in range(_CAS_ATTEMPTS):
            raw = self.store.get(key)
            current = Stay.from_json(raw) if raw is not None else None
            new = change(current)
            if new is None:
                return Transition(current, changed=False)
            if self.store.compare_and_set(key, raw, new.to_json(), STAY_TTL_MS):
                return Transition(new, changed=True)
        raise RuntimeError(f"stay of {user_id} in {chat_id}: too many concurrent changes")

    # -- challenges -------------------------------------------------------------------------

    def get_challenge(self, token: str) -> Challenge | None:
        data = self.store.get(challenge_key(token))
        return Challenge.from_json(data) if data is not None else None

    def create_challenge(self, challenge: Challenge) -> bool:
        return self.store.set_if_absent(
            challenge_key(challenge.token), challenge.to_json(), CHALLENGE_TTL_MS
        )

    def update_challenge(
        self, token: str, change: Callable[[Challenge], Challenge | None]
    ) -> Challenge | None:
        """Compare-and-set ``change`` on the challenge; the written value, or None when
        ``change`` refused (or there is no such challenge)."""
        key = challenge_key(token)
        for _ in range(_CAS_ATTEMPTS):
            raw = self.store.get(key)
            if raw is None:
                return None
            new = change(Challenge.from_json(raw))
            if new is None:
                return None
            if self.store.compare_and_set(key, raw, new.to_json(), CHALLENGE_TTL_MS):
                return new
        raise RuntimeError(f"challenge {token}: too many concurrent changes")

    def decide(self, token: str, outcome: str, *, finisher: str) -> Challenge | None:
        """pending -> ``outcome``, once: the challenge if this call won, else None."""
        at = time.time()

        def change(c: Challenge) -> Challenge | None:
            if not c.pending:
                return None
            return replace(c, status=outcome, decided_at=at, finisher=finisher)

        return self.update_challenge(token, change)

    # -- anti-raid and the last welcome -----------------------------------------------------

    def count_join(self, chat_id: int, at: int, window_seconds: int) -> float:
        """Count a join at ``at`` and return the joins of the last ``window_seconds``: this
        window's count plus the previous window's, weighted by how much of it still overlaps
        (a sliding window from two counters, so a raid across a boundary is seen)."""
        window = at // window_seconds
        ttl = (2 * window_seconds + 60) * 1000
        current = self.store.increment(f"members:j:{chat_id}:{window}", 1, ttl_ms=ttl)
        previous = self.store.get(f"members:j:{chat_id}:{window - 1}") or 0
        overlap = (window_seconds - at % window_seconds) / window_seconds
        return current + int(previous) * overlap

    def start_strict(self, chat_id: int, now: int, minutes: int, mode: str = "captcha") -> bool:
        """Turn the strict mode on; True only for the call that turned it on."""
        until = int(time.time()) + minutes * 60
        strict = Strict(since=now, until=until, mode=mode)
        return self.store.set_if_absent(
            f"members:strict:{chat_id}", strict.to_json(), ttl_ms=minutes * 60 * 1000
        )

    def strict(self, chat_id: int) -> bool:
        return self.store.get(f"members:strict:{chat_id}") is not None

    def get_strict(self, chat_id: int) -> Strict | None:
        return Strict.from_json(self.store.get(f"members:strict:{chat_id}"))

    def update_strict(
        self, chat_id: int, change: Callable[[Strict], Strict | None]
    ) -> Strict | None:
        """Compare-and-set the strict mode; the new value, or None when ``change`` declined
        (or the mode ended). It keeps the mode's end (its TTL is what is left of it)."""
        key = f"members:strict:{chat_id}"
        for _ in range(_CAS_ATTEMPTS):
            raw = self.store.get(key)
            current = Strict.from_json(raw)
            if current is None:
                return None
            new = change(current)
            if new is None:
                return None
            left_ms = current.until * 1000 - int(time.time() * 1000)
            if left_ms <= 0:
                return None
            if self.store.compare_and_set(key, raw, new.to_json(), ttl_ms=left_ms):
                return new
        return None

    def claim_notice(
        self, chat_id: int, link: str, now: int, every: int, ttl_ms: int
    ) -> tuple[bool, int | None]:
        """Claim the next "join requests only" notice of ``link`` (at most one per ``every``
        seconds): whether this call may post it, and the previous notice to delete."""
        key = f"members:rn:{chat_id}"
        raw = self.store.get(key)
        last = raw if isinstance(raw, dict) else {}
        if last.get("link") == link and now - int(last.get("at", 0)) < every:
            return False, None
        claim = {"at": now, "link": link, "message_id": None}
        if not self.store.compare_and_set(key, raw, claim, ttl_ms):
            return False, None
        previous = last.get("message_id")
        return True, int(previous) if previous is not None else None

    def notice_posted(self, chat_id: int, link: str, at: int, message_id: int, ttl_ms: int) -> None:
        claim = {"at": at, "link": link, "message_id": None}
        posted = dict(claim, message_id=message_id)
        self.store.compare_and_set(f"members:rn:{chat_id}", claim, posted, ttl_ms)

    def last_notice(self, chat_id: int, link: str) -> int | None:
        """The message id of the last notice of ``link``, if it is the chat's last one."""
        raw = self.store.get(f"members:rn:{chat_id}")
        if not isinstance(raw, dict) or raw.get("link") != link:
            return None
        message_id = raw.get("message_id")
        return int(message_id) if message_id is not None else None

    def swap_last_welcome(self, chat_id: int, message_id: int) -> int | None:
        """Remember ``message_id`` as the chat's last welcome; return the one it replaces."""
        key = f"members:w:{chat_id}"
        for _ in range(_CAS_ATTEMPTS):
            previous = self.store.get(key)
            if self.store.compare_and_set(key, previous, message_id, STAY_TTL_MS):
                return int(previous) if previous is not None else None
        return None
