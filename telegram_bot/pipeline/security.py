"""The security step of the update path: ``check`` returns the sender, or a refusal.

Who is sending, may they, and are they over a rate limit. Refusals end quietly.

Rate limits are fixed one-minute windows on atomic KV counters (``rl:``), per user and per chat,
with a stricter budget for expensive commands. They apply to interactions with the bot
(commands, button presses, private messages), not to ordinary group chatter, and not to admins;
a group's own administrators (an app that knows them says so; an anonymous admin writes as the
group) spend none of the group's budget, so members who spent it cannot silence moderation.
A refused sender is told so at most once per window (no reply storms).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from django.conf import settings
from django.utils.translation import gettext_lazy

from telegram_bot.admins import Role, configured_role, role_of, sent_as_the_chat
from telegram_bot.bot import bot_username
from telegram_bot.state import KVStore
from telegram_bot.updates import Update

WINDOW_MS = 60_000

# Apps that know a chat's own administrators say whether (chat id, user id) is one of them.
ChatAdminCheck = Callable[[int, int], bool]
_chat_admin_checks: list[ChatAdminCheck] = []


def register_chat_admin_check(check: ChatAdminCheck) -> None:
    """A chat's own administrators spend none of its shared budget (``over_rate_limit``)."""
    if check not in _chat_admin_checks:
        _chat_admin_checks.append(check)


class Sender:
    """Who sent the update. The role is looked up on first use: ordinary group messages, the
    bulk of the traffic, never need it."""

    def __init__(self, user_id: int | None, role: Role | None = None) -> None:
        self.user_id = user_id
        if role is not None:
            self.__dict__["role"] = role

    @cached_property
    def role(self) -> Role:
        return role_of(self.user_id)

    def __repr__(self) -> str:
        return f"Sender(user_id={self.user_id})"

    @property
    def knows_admin_without_lookup(self) -> bool:
        """An admin by the environment (owner, ADMIN_TELEGRAM_IDS): no query needed."""
        if "role" in self.__dict__:
            return self.is_admin
        configured = configured_role(self.user_id)
        return configured is not None and configured >= Role.ADMIN

    @property
    def is_admin(self) -> bool:
        return self.role >= Role.ADMIN

    @property
    def is_owner(self) -> bool:
        return self.role == Role.OWNER


@dataclass(frozen=True)
class Refusal:
    """Why an update (``chat``, ``addressee``: nothing runs) or its routed handler (``rate``,
    ``role``, ``expensive``: observers still see the update) is refused, and what the sender is
    told (once per window; nothing for the first two)."""

    reason: str
    sender: Sender
    message: str = ""

    @property
    def whole_update(self) -> bool:
        return self.reason in ("chat", "addressee")


REFUSAL_TEXTS = {
    "rate": gettext_lazy("Too many requests. Please wait a minute."),
    "role": gettext_lazy("This is for admins only."),
    "expensive": gettext_lazy("Please wait a minute before using this again."),
}


def check(
    store: KVStore,
    update: Update,
    *,
    role: Role = Role.USER,
    expensive: bool = False,
    replay: bool = False,
    counted: int | None = None,
    allowed: bool | None = None,
) -> Sender | Refusal:
    """The one security step: the sender of ``update``, or why it is refused.

    ``role`` and ``expensive`` are what the routed handler requires. A replay is an operator's
    decision: it does not count against the sender's rate limits. ``counted``: the new value
    of the sender's window counter when the claim took it (``claim_counters``), else None.
    ``allowed``: ``chat_allowed(update)`` when the caller worked it out already.
    """
    sender = identify(update)
    if not (chat_allowed(update) if allowed is None else allowed):
        return Refusal("chat", sender)
    if not addressed_to_us(update):
        return Refusal("addressee", sender)
    if not replay and over_rate_limit(store, update, sender, counted):
        return Refusal("rate", sender, str(REFUSAL_TEXTS["rate"]))
    if role > Role.USER and sender.role < role:
        return Refusal("role", sender, str(REFUSAL_TEXTS["role"]))
    if (
        expensive
        and not replay
        and not _as_the_chat(update)
        and over_expensive_limit(store, sender)
    ):
        return Refusal("expensive", sender, str(REFUSAL_TEXTS["expensive"]))
    return sender


def identify(update: Update) -> Sender:
    return Sender(user_id=update.user_id)


def addressed_to_us(update: Update) -> bool:
    """False for ``/command@OtherBot``: in groups, commands for other bots are not ours."""
    command = update.command()
    if command is None or command.mention is None:
        return True
    ours = bot_username()
    return ours is None or command.mention.lower() == ours.lower()


def chat_allowed(update: Update) -> bool:
    """Private chats always; other chats when ALLOWED_CHAT_IDS is empty or lists them. The
    bot's own membership (``my_chat_member``) is seen from every chat: the bot records where
    it is and may leave a chat that is not listed."""
    chat_type, chat_id = update.chat_type, update.chat_id
    if chat_id is None or chat_type == "private" or update.type == "my_chat_member":
        return True
    allowed = settings.ALLOWED_CHAT_IDS
    return not allowed or chat_id in allowed


def is_interaction(update: Update) -> bool:
    if update.type == "callback_query":
        return True
    if update.type == "message":
        return update.chat_type == "private" or update.command() is not None
    return False


def claim_counters(update: Update) -> list[tuple[str, int | None]]:
    """The sender's window counter, for the pipeline to take with its claim on the update (one
    KV step for both, ``set_if_absent_and_increment``): an interaction by a sender who counts
    (the owner and the environment's admins count nowhere). Its new value comes back to
    ``check`` as ``counted``; where the claim took nothing, ``over_rate_limit`` counts."""
    if not is_interaction(update):
        return []
    sender = identify(update)
    if sender.user_id is None or sender.knows_admin_without_lookup:
        return []
    return [(_user_window_key(sender.user_id, _window()), WINDOW_MS + 1000)]


def _user_window_key(user_id: int, window: int) -> str:
    return f"rl:u:{user_id}:{window}"


def over_rate_limit(
    store: KVStore, update: Update, sender: Sender, counted: int | None = None
) -> bool:
    """Count this interaction against the user's and the chat's window; True when over.
    ``counted``: the user's window counter already taken with the claim (its new value).

    Admins are exempt. The owner and the environment's admins are known without I/O and
    count nowhere; an admin from the BotAdmin rows is looked up only when it decides
    something (the user's window is full, or the interaction would count against a group's
    window): a command or a press in a private chat, under its limit, costs no admin lookup
    in the database. Such an admin's own window counter is kept, never read for them.
    """
    if not is_interaction(update):
        return False
    if sender.knows_admin_without_lookup or _as_the_chat(update):
        return False
    window = _window()
    if sender.user_id is not None:
        if counted is None:
            key = _user_window_key(sender.user_id, window)
            counted = store.increment(key, 1, ttl_ms=WINDOW_MS + 1000)
        if counted > settings.RATE_LIMIT_USER_PER_MINUTE and not sender.is_admin:
            return True
    if update.chat_id is not None and update.chat_type != "private":
        # Admins' interactions use none of the chat's budget.
        if sender.is_admin:
            return False
        count = store.increment(f"rl:c:{update.chat_id}:{window}", 1, ttl_ms=WINDOW_MS + 1000)
        # Members who spent it must not silence the chat's own administrators (a /ban in a
        # flood of commands): asked only once it is spent.
        if count > settings.RATE_LIMIT_CHAT_PER_MINUTE and not _chat_admin(update, sender):
            return True
    return False


def _as_the_chat(update: Update) -> bool:
    """Sent in the name of its own group (``admins.sent_as_the_chat``): an anonymous admin,
    whose sender id is Telegram's one anonymous bot, shared by every group, so its windows
    would be every group's anonymous admins' together."""
    return update.message is not None and sent_as_the_chat(update.message)


def _chat_admin(update: Update, sender: Sender) -> bool:
    if update.chat_id is None or sender.user_id is None:
        return False
    return any(check(update.chat_id, sender.user_id) for check in _chat_admin_checks)


def over_expensive_limit(store: KVStore, sender: Sender) -> bool:
    if sender.is_admin or sender.user_id is None:
        return False
    key = f"rl:x:{sender.user_id}:{_window()}"
    return (
        store.increment(key, 1, ttl_ms=WINDOW_MS + 1000) > settings.RATE_LIMIT_EXPENSIVE_PER_MINUTE
    )


def may_notify_refusal(store: KVStore, sender: Sender, reason: str) -> bool:
    """True once per window and reason for a sender: the refusal itself is rate-limited."""
    if sender.user_id is None:
        return False
    return store.set_if_absent(f"rl:n:{reason}:{sender.user_id}", 1, ttl_ms=WINDOW_MS)


def _window() -> int:
    return int(time.time() * 1000) // WINDOW_MS
