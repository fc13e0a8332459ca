"""A chat's rules compiled once into one matcher, cached in the process per chat.

``rules_of`` gives the chat's ``ChatRules`` (locks, allowed domains, blocklist, approved
members) from a small in-process cache; a change made through this app's services or the admin
site drops the chat's entry in this process at once (``forget``, and the model signals), and
other processes see it within ``CACHE_SECONDS``. A chat with no rules costs a dictionary lookup
on the message path; ``ChatRules.verdict`` tells which rule a message breaks.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from django.db.models.signals import post_delete, post_save

from moderation.rights import is_member_message
from moderation.rules import kinds
from moderation.rules.blocklist import Blocklist
from moderation.rules.models import AllowedDomain, Approval, BlocklistEntry, Filter, Lock, Note
from telegram_bot import features
from telegram_bot.updates import Message

CACHE_SECONDS = 10.0
CACHE_SIZE = 4096


@dataclass(frozen=True)
class LockRule:
    kind: str
    action: str
    seconds: int | None
    message: str = ""


@dataclass(frozen=True)
class Verdict:
    """The rule a message breaks: ``rule`` names it in the audit log (``lock:url``,
    ``blocklist:free money``), ``cause`` tells its automatic actions apart."""

    cause: str  # "lock" or "blocklist"
    rule: str
    action: str
    seconds: int | None
    message: str = ""  # said in the chat when the rule deletes a message (a lock's)


@dataclass(frozen=True)
class ChatRules:
    locks: dict[str, LockRule]
    domains: frozenset[str]
    blocklist: Blocklist
    approved: frozenset[int]
    # A message field -> the chat's locks that need it (``kinds.FIELDS``): a message is
    # checked only against the locks its fields can break.
    lock_index: dict[str, frozenset[str]] = field(default_factory=dict)
    notes: frozenset[str] = frozenset()  # the names of the chat's notes
    filters: Blocklist = field(default_factory=Blocklist)  # keywords, matched as the blocklist

    @property
    def empty(self) -> bool:
        return not self.locks and not self.blocklist

    @property
    def answers(self) -> bool:
        """Whether the chat has notes or filters (``replies``)."""
        return bool(self.notes or self.filters)

    def verdict(self, message: Message) -> Verdict | None:
        """The first rule ``message`` breaks (locks first, then the blocklist), ignoring who
        sent it; None for none. ``bots`` is not a message rule (``bots_added``)."""
        if self.lock_index:
            index = self.lock_index
            candidates: set[str] = set()
            for name in kinds.present_fields(message):
                found = index.get(name)
                if found:
                    candidates |= found
            for kind, lock in self.locks.items():  # in the kinds' order
                if kind in candidates and self._breaks(kind, message):
                    return Verdict("lock", f"lock:{kind}", lock.action, lock.seconds, lock.message)
        if self.blocklist:
            entry = self.blocklist.first_match(message.text_or_caption)
            if entry is not None:
                return Verdict(
                    "blocklist", f"blocklist:{entry.pattern}", entry.action, entry.seconds
                )
        return None

    def _breaks(self, kind: str, message: Message) -> bool:
        if kind == "url":
            return any(
                not kinds.allowed(kinds.host_of(link), self.domains)
                for link in kinds.links(message)
            )
        if kind == "invitelink":
            return any(kinds.is_invite(link) for link in kinds.links(message))
        check = kinds.CHECKS.get(kind)
        return check is not None and check(message)


NO_RULES = ChatRules({}, frozenset(), Blocklist(), frozenset())
_cache: dict[int, tuple[float, ChatRules]] = {}
_lock = threading.Lock()


def rules_of(chat_id: int) -> ChatRules:
    """The chat's compiled rules (see the module docstring)."""
    now = time.monotonic()
    hit = _cache.get(chat_id)
    if hit is not None and hit[0] > now:
        return hit[1]
    found = _compile(chat_id)
    with _lock:
        if len(_cache) >= CACHE_SIZE:
            _cache.clear()
        _cache[chat_id] = (now + CACHE_SECONDS, found)
    return found


def _compile(chat_id: int) -> ChatRules:
    # Locks in a fixed order: invite links before links, so an invitation is named as one.
    order = {kind: index for index, kind in enumerate(kinds.KINDS)}
    rows = sorted(
        Lock.objects.filter(chat_id=chat_id).values_list("kind", "action", "seconds", "message"),
        key=lambda row: order.get(row[0], len(order)),
    )
    locks = {kind: LockRule(kind, action, seconds, text) for kind, action, seconds, text in rows}
    domains = frozenset(
        AllowedDomain.objects.filter(chat_id=chat_id).values_list("domain", flat=True)
    )
    blocklist = Blocklist.compile(
        BlocklistEntry.objects.filter(chat_id=chat_id)
        .order_by("id")
        .values_list("pattern", "action", "seconds")
    )
    approved = frozenset(Approval.objects.filter(chat_id=chat_id).values_list("user_id", flat=True))
    notes = frozenset(Note.objects.filter(chat_id=chat_id).values_list("name", flat=True))
    filters = Blocklist.compile(
        (keyword, "", None)
        for keyword in Filter.objects.filter(chat_id=chat_id)
        .order_by("id")
        .values_list("keyword", flat=True)
    )
    if not (locks or domains or blocklist or approved or notes or filters):
        return NO_RULES
    index: dict[str, set[str]] = {}
    for kind in locks:
        for name in kinds.FIELDS.get(kind, ()):
            index.setdefault(name, set()).add(kind)
    frozen = {name: frozenset(found) for name, found in index.items()}
    return ChatRules(locks, domains, blocklist, approved, frozen, notes, filters)


def is_approved(chat_id: int, user_id: int) -> bool:
    """The exemption check registered with the core (``telegram_bot.exemptions``); nobody is
    approved while the app is switched off (``FEATURES_DISABLED``)."""
    return features.is_enabled("rules") and user_id in rules_of(chat_id).approved


def member_verdict(chat_id: int, message: Message) -> Verdict | None:
    """The rule a member's message breaks, unless its author is approved; None for a
    message that is not a member's own (a service message, a post as a chat, a bot's)."""
    rules = rules_of(chat_id)
    if rules.empty or not is_member_message(message) or message.from_user is None:
        return None
    if message.from_user.id in rules.approved:
        return None
    return rules.verdict(message)


def forget(chat_id: int | None = None) -> None:
    with _lock:
        if chat_id is None:
            _cache.clear()
        else:
            _cache.pop(chat_id, None)


def _on_change(sender: type, instance: object, **kwargs: object) -> None:
    forget(getattr(instance, "chat_id", None))


def connect_signals() -> None:
    for model in (Lock, AllowedDomain, BlocklistEntry, Approval, Note, Filter):
        uid = f"rules-{model.__name__}"
        post_save.connect(_on_change, sender=model, dispatch_uid=f"{uid}-save")
        post_delete.connect(_on_change, sender=model, dispatch_uid=f"{uid}-del")
