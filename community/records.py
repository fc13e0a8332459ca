"""The only state a join request leaves behind: one KV record per pending request, with a TTL.

``jr:r:<token>`` holds a ``JoinRequestRecord`` as JSON. The token is 12 URL-safe characters
from ``secrets`` (72 random bits): it is what the Approve / Decline buttons carry, so a button
cannot be forged from the chat and user ids. ``jr:q:<chat>:<user>`` points at the newest
token of a (chat, user) pair so that a newer request replaces an older one.
``jr:u:<update_id>`` is the receipt of a chat_join_request update: the token its first
delivery chose. Telegram delivers an update again after a 503 (or no answer); the re-delivery
finds the same record instead of creating a second one (``receive``).

Every change is a compare-and-set on the whole record (``update``): whoever changes a record
first wins, and a change computed from an outdated read is retried on the fresh value or
refused. There is no table of requests; a record lives ``PENDING_TTL_MS`` while undecided and
``DECIDED_TTL_MS`` after (long enough to answer a late press with "already decided by X").
The ``jr:`` family is this app's (``CommunityConfig.key_families``); versions up to 0.2 kept
the same keys in the core's ``lock:`` family, and ``legacy_keys_move`` (run by the data
migration ``0005_join_request_keys``) moves them.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from telegram_bot.state import KVStore

PENDING_TTL_MS = 7 * 24 * 3600 * 1000
DECIDED_TTL_MS = 2 * 24 * 3600 * 1000
TOKEN_BYTES = 9  # 12 characters of base64url
TOKEN_RE = re.compile(r"[A-Za-z0-9_-]{12}")
RECORD_PREFIX = "jr:r:"
INDEX_PREFIX = "jr:q:"
RECEIPT_PREFIX = "jr:u:"  # not under RECORD_PREFIX: a scan of the records never sees it
# A record lives at least DECIDED_TTL_MS after it is created (pending: 7 days; decided or
# closed: 2 days from then), so while its receipt lives, a receipt without a record means "the
# first delivery stopped before creating it", never "it expired". Telegram keeps an undelivered
# update for 24 hours: no re-delivery comes later than that.
RECEIPT_TTL_MS = DECIDED_TTL_MS
_CAS_ATTEMPTS = 20

# status
PENDING = "pending"  # undecided: the buttons work
DECIDING = "deciding"  # a decision won; Telegram is being asked (maybe through a retry job)
DONE = "done"  # Telegram accepted the decision
CLOSED = "closed"  # Telegram had already handled it, or a newer request replaced it
# stage of a pending request: who is expected to decide it. A request leaves "new" or
# "question" for "admins" once, by compare-and-set, so the admins are notified once.
STAGE_NEW = "new"
STAGE_QUESTION = "question"
STAGE_ADMINS = "admins"

APPROVE = "approve"
DECLINE = "decline"


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class Decider:
    """Who decided: an admin (``user_id``) or a policy (``user_id`` None)."""

    user_id: int | None
    name: str


@dataclass(frozen=True)
class Decision:
    action: str
    by_id: int | None
    by_name: str
    at: int  # unix seconds


@dataclass(frozen=True)
class JoinRequestRecord:
    token: str
    chat_id: int
    chat_title: str
    chat_type: str
    user_id: int
    user_chat_id: int
    user_name: str  # for admins: name and @username
    member_name: str  # for the welcome: first and last name
    summary: str
    requested_at: int
    expires_at_ms: int
    status: str = PENDING
    stage: str = STAGE_NEW
    note: str = ""
    copies: list[list[int]] = field(default_factory=list)  # [[admin chat id, message id]]
    decision: Decision | None = None
    closed_reason: str = ""
    asked: bool = False  # the question policy's question was sent to the requester
    # Until when (unix ms) one delivery or job is asking the question: another one meanwhile
    # leaves it to the waiting question's job instead of sending it a second time.
    asking_until: int = 0
    # False from the moment the stage moves to "admins" until the admins' copies are recorded:
    # a hand-off that stopped in between (a failure, a killed process) is finished by the next
    # run of the same update or job. True by default: records stored before it existed.
    notified: bool = True

    @property
    def pending(self) -> bool:
        return self.status == PENDING

    def same_request(self, other: JoinRequestRecord) -> bool:
        """True when both records stand for one chat_join_request (one update)."""
        return (self.chat_id, self.user_id, self.requested_at) == (
            other.chat_id,
            other.user_id,
            other.requested_at,
        )

    def newer_than(self, other: JoinRequestRecord) -> bool:
        # expires_at_ms is creation time plus a constant: it orders requests of the same second.
        return (self.requested_at, self.expires_at_ms) > (other.requested_at, other.expires_at_ms)

    def decided_by(self, action: str, decider: Decider, at: int) -> JoinRequestRecord:
        decision = Decision(action=action, by_id=decider.user_id, by_name=decider.name, at=at)
        return replace(self, status=DECIDING, decision=decision, note="")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, raw: Any) -> JoinRequestRecord | None:
        if not isinstance(raw, dict):
            return None
        data = dict(raw)
        decision = data.get("decision")
        try:
            data["decision"] = Decision(**decision) if isinstance(decision, dict) else None
            return cls(**data)
        except TypeError:
            return None


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


class JoinRequestStore:
    """Typed access to the join-request records over the KV contract."""

    def __init__(self, store: KVStore) -> None:
        self.store = store

    @staticmethod
    def key(token: str) -> str:
        return f"{RECORD_PREFIX}{token}"

    @staticmethod
    def index_key(chat_id: int, user_id: int) -> str:
        return f"{INDEX_PREFIX}{chat_id}:{user_id}"

    @staticmethod
    def receipt_key(update_id: int) -> str:
        return f"{RECEIPT_PREFIX}{update_id}"

    def receive(
        self, update_id: int, make: Callable[[str], JoinRequestRecord]
    ) -> tuple[JoinRequestRecord | None, bool]:
        """The record of the join request that update ``update_id`` carries, and whether this
        call created it (``make(token)`` builds it).

        The first delivery picks a fresh token and keeps it in the update's receipt before it
        creates the record; a re-delivery reads the token from the receipt, so both end up
        with one record, whichever of them stopped half-way. None: the record is gone.
        """
        key = self.receipt_key(update_id)
        fresh = new_token()
        for _ in range(_CAS_ATTEMPTS):
            if self.store.set_if_absent(key, fresh, RECEIPT_TTL_MS):
                token = fresh
            else:
                stored = self.store.get(key)
                if not isinstance(stored, str):
                    continue  # expired between the two calls: claim it again
                token = stored
            record = make(token)
            if self.store.set_if_absent(self.key(token), record.to_json(), _ttl(record)):
                return record, True
            existing = self.get(token)
            if existing is None or existing.same_request(record):
                return existing, False
            # 72 random bits met another request's token: give this update another one.
            fresh = new_token()
            self.store.compare_and_set(key, token, fresh, RECEIPT_TTL_MS)
        raise RuntimeError(f"join request of update {update_id}: too much contention")

    def get(self, token: str) -> JoinRequestRecord | None:
        if not TOKEN_RE.fullmatch(token):
            return None
        return JoinRequestRecord.from_json(self.store.get(self.key(token)))

    def update(
        self, token: str, change: Callable[[JoinRequestRecord], JoinRequestRecord | None]
    ) -> tuple[JoinRequestRecord | None, bool]:
        """Apply ``change`` atomically (compare-and-set, retried on a concurrent write).

        ``change`` returns the new record, or None to leave the record as it is. Returns the
        record as it now stands (None if there is none) and whether this call changed it.
        """
        key = self.key(token)
        for _ in range(_CAS_ATTEMPTS):
            raw = self.store.get(key)
            record = JoinRequestRecord.from_json(raw)
            if record is None:
                return None, False
            changed = change(record)
            if changed is None:
                return record, False
            if self.store.compare_and_set(key, raw, changed.to_json(), _ttl(changed)):
                return changed, True
        raise RuntimeError(f"join request {token}: too much contention")

    def newest(self, chat_id: int, user_id: int) -> str | None:
        """The token of the newest request of (chat, user), if any."""
        token = self.store.get(self.index_key(chat_id, user_id))
        return token if isinstance(token, str) else None

    def set_newest(self, chat_id: int, user_id: int, token: str) -> None:
        self.store.set(self.index_key(chat_id, user_id), token, PENDING_TTL_MS)

    def all(self) -> Iterator[JoinRequestRecord]:
        for key in self.store.scan_all(RECORD_PREFIX):
            record = JoinRequestRecord.from_json(self.store.get(key))
            if record is not None:
                yield record


def _ttl(record: JoinRequestRecord) -> int:
    if record.status == PENDING:
        return max(1, record.expires_at_ms - now_ms())
    return DECIDED_TTL_MS


# Where versions up to 0.2 kept the same values, in the core's ``lock:`` family.
LEGACY_PREFIXES = {
    "lock:jr:": RECORD_PREFIX,
    "lock:jrq:": INDEX_PREFIX,
    "lock:jru:": RECEIPT_PREFIX,
}


def legacy_keys_move(store: KVStore) -> int:
    """Move join-request keys from the ``lock:`` family to ``jr:``; return how many moved.

    Each value is copied with ``set_if_absent`` (never over a key already there: a copy by a
    concurrent or earlier run, or a record the new code has changed since) and the old key is
    then deleted, so a second or concurrent run moves nothing twice and loses nothing. The KV
    contract does not read TTLs back: a record gets the TTL its status gives it (a pending one
    still expires when it was due to), a pointer or a receipt its full TTL again. A value that
    is not a record or a token is left where it is, to expire. Run it while no older version
    of the app writes join requests (the ``migrate`` step, before web and worker start).
    """
    moved = 0
    for key in store.scan_all("lock:jr"):
        old_prefix = next((p for p in LEGACY_PREFIXES if key.startswith(p)), None)
        raw = store.get(key) if old_prefix is not None else None
        if old_prefix is None or raw is None:
            continue
        new_key = LEGACY_PREFIXES[old_prefix] + key[len(old_prefix) :]
        if old_prefix == "lock:jr:":
            record = JoinRequestRecord.from_json(raw)
            if record is None:
                continue
            ttl = _ttl(record)
        elif isinstance(raw, str):
            ttl = RECEIPT_TTL_MS if old_prefix == "lock:jru:" else PENDING_TTL_MS
        else:
            continue
        if store.set_if_absent(new_key, raw, ttl):
            moved += 1
        store.delete(key)
    return moved
