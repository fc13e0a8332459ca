"""Who may moderate a chat, and what the bot itself may do there.

A chat's own Telegram administrators come from getChatAdministrators, cached in the KV store
(``mod:adm:<chat>``, ``ADMINS_TTL_MS``) and dropped when a ``chat_member`` update shows someone
becoming or ceasing to be an administrator. The owner of the chat and the bot's global admins
(``telegram_bot.admins``) may do everything; an administrator only what their own Telegram
rights allow (``can_restrict_members`` for mute/ban/kick/warn, ``can_delete_messages`` for
/del and /purge).

Anonymous admins. A message an admin sends "as the group" comes from Telegram's
GroupAnonymousBot with ``sender_chat`` set to the chat itself; only the chat's own anonymous
admins can send one, but which of them sent it cannot be known. Such a command is allowed only
when every anonymous admin of the chat holds the right it needs (so whoever sent it has it);
otherwise it is refused, naming the right and how to act (grant it, or write without
"Remain anonymous"). A linked channel's automatic forwards and posts on behalf of other
chats (``sender_chat``) are not members: they never moderate and are never moderated.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from telegram_bot.admins import (
    STAND_IN_IDS,
    Role,
    role_of,
)
from telegram_bot.bot import bot_id, get_client
from telegram_bot.client import TelegramClient
from telegram_bot.errors import TelegramApiError
from telegram_bot.state import KVStore, get_store
from telegram_bot.updates import Message

ADMINS_TTL_MS = 10 * 60 * 1000
RESTRICT, DELETE = "can_restrict_members", "can_delete_messages"
RIGHT_NAMES = {
    RESTRICT: gettext_lazy("restrict members"),
    DELETE: gettext_lazy("delete messages"),
}


@dataclass(frozen=True)
class ChatAdmin:
    user_id: int
    status: str  # "creator" or "administrator"
    can_restrict: bool
    can_delete: bool
    username: str = ""
    is_anonymous: bool = False

    def may(self, right: str) -> bool:
        if self.status == "creator":
            return True
        return self.can_restrict if right == RESTRICT else self.can_delete


ASK_EVERY_MS = 60_000  # is_chat_admin's calls to Telegram without a cached list, per chat


def admins_key(chat_id: int) -> str:
    return f"mod:adm:{chat_id}"


def is_group_id(chat_id: int) -> bool:
    """Groups and supergroups have negative ids; a private chat has its user's. An update that
    calls chat 1000 a supergroup is forged: moderation neither acts there nor asks Telegram
    about it (Telegram would answer that a private chat has no administrators)."""
    return chat_id < 0


def chat_admins(store: KVStore, client: TelegramClient, chat_id: int) -> dict[int, ChatAdmin]:
    """The chat's owner and administrators (the bot included when it is one); none for a
    chat id no group has (``is_group_id``), without asking Telegram.

    Fetched from Telegram on a miss and cached only if nobody forgot the list meanwhile: the
    list is stored by compare-and-set against what the key held before the fetch, and
    ``forget_chat_admins`` writes a fresh marker. A demotion handled while the fetch was in
    flight (another worker) so never gets its old list cached back, trusted for 10 minutes."""
    if not is_group_id(chat_id):
        return {}
    key = admins_key(chat_id)
    admins: list[ChatAdmin] = []
    for _attempt in range(3):
        before = store.get(key)
        if isinstance(before, list):
            return {row[0]: ChatAdmin(*row) for row in before}
        members = client.get_chat_administrators(chat_id=chat_id)
        admins = [_admin(member) for member in members]
        rows = [
            [a.user_id, a.status, a.can_restrict, a.can_delete, a.username, a.is_anonymous]
            for a in admins
        ]
        if store.compare_and_set(key, before, rows, ADMINS_TTL_MS):
            break
        # Forgotten while Telegram answered: this answer may predate the change; ask again.
    return {admin.user_id: admin for admin in admins}


def is_chat_admin(chat_id: int, user_id: int) -> bool:
    """For the core's rate limits (``security.register_chat_admin_check``, asked once the
    group's budget is spent): whether ``user_id`` is one of the chat's own administrators.
    The cached list answers; without one, Telegram is asked at most once a minute per chat (a
    flood of refused commands costs no call each), and False when it cannot say."""
    if not is_group_id(chat_id):
        return False  # an update saying otherwise is not asked about
    store = get_store()
    cached = store.get(admins_key(chat_id))
    if isinstance(cached, list):
        return any(isinstance(row, list) and row and row[0] == user_id for row in cached)
    if not store.set_if_absent(f"mod:adm:asked:{chat_id}", 1, ttl_ms=ASK_EVERY_MS):
        return False
    try:
        return user_id in chat_admins(store, get_client(), chat_id)
    except TelegramApiError:
        return False


def forget_chat_admins(store: KVStore, chat_id: int) -> None:
    """Drop the cached list: a new marker (never the absent key a fetch in flight expects)."""
    store.set(admins_key(chat_id), {"forgotten": secrets.token_hex(8)}, ADMINS_TTL_MS)


def _admin(member: dict[str, Any]) -> ChatAdmin:
    user = member.get("user") or {}
    return ChatAdmin(
        user_id=int(user.get("id", 0)),
        status=str(member.get("status")),
        can_restrict=bool(member.get(RESTRICT)),
        can_delete=bool(member.get(DELETE)),
        username=str(user.get("username") or "").lower(),
        is_anonymous=bool(member.get("is_anonymous")),
    )


class Refusal(Exception):
    """A moderation request refused with a one-line answer (nothing was changed)."""


def check_moderator(admins: dict[int, ChatAdmin], user_id: int | None, right: str) -> None:
    """Refuse unless ``user_id`` may use ``right`` in the chat of ``admins``."""
    if user_id is None:
        raise Refusal(_("Only the chat's admins can do that."))
    if role_of(user_id) >= Role.ADMIN:
        return
    admin = admins.get(user_id)
    if admin is None:
        raise Refusal(_("Only the chat's admins can do that."))
    if not admin.may(right):
        raise Refusal(
            _("You need the right to %(right)s for that.") % {"right": RIGHT_NAMES[right]}
        )


def check_anonymous(admins: dict[int, ChatAdmin], right: str) -> None:
    """Refuse an anonymous admin's command unless every anonymous admin may use ``right``."""
    anonymous = [admin for admin in admins.values() if admin.is_anonymous]
    if not anonymous:
        raise Refusal(_('I can\'t tell which admin you are: turn off "Remain anonymous".'))
    if not all(admin.may(right) for admin in anonymous):
        raise Refusal(
            _(
                "Not every anonymous admin here may %(right)s, and I can't tell which one you "
                'are: turn off "Remain anonymous" for this, or grant the right.'
            )
            % {"right": RIGHT_NAMES[right]}
        )


def is_member_message(message: Message) -> bool:
    """Written by a member in person: not a bot, not an anonymous admin, not a post on behalf
    of a chat or a linked channel's automatic forward, not a service message."""
    user = message.from_user
    return not (
        user is None
        or user.is_bot
        or user.id in STAND_IN_IDS
        or message.sender_chat is not None
        or (message.model_extra or {}).get("is_automatic_forward")
        or message.is_service
    )


def check_bot(admins: dict[int, ChatAdmin], right: str) -> None:
    """Refuse, saying which right the bot lacks, unless it holds ``right``."""
    me = admins.get(bot_id() or 0)
    if me is None:
        raise Refusal(
            _("I am not an admin here: make me one with the right to %(right)s.")
            % {"right": RIGHT_NAMES[right]}
        )
    if not me.may(right):
        raise Refusal(
            _("I lack the right to %(right)s: an owner can grant it.")
            % {"right": RIGHT_NAMES[right]}
        )


def is_protected(admins: dict[int, ChatAdmin], user_id: int) -> str | None:
    """Why ``user_id`` cannot be moderated (the bot, the owner, an admin), or None."""
    if user_id == bot_id():
        return _("I won't act on myself.")
    if user_id in STAND_IN_IDS:
        return _("That is Telegram's stand-in for an anonymous admin or a channel, not a member.")
    admin = admins.get(user_id)
    if admin is not None:
        return (
            _("That is the chat's owner.") if admin.status == "creator" else _("That is an admin.")
        )
    if role_of(user_id) >= Role.ADMIN:
        return _("That is one of the bot's admins.")
    return None
