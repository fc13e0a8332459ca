"""Who may moderate a chat, and what the bot itself may do there.

A chat's own Telegram administrators come from getChatAdministrators, cached in the KV store
(``mod:adm:<chat>``, ``ADMINS_TTL_MS``) and dropped when a ``chat_member`` update shows someone
becoming or ceasing to be an administrator. The owner of the chat and the bot's global admins
(``telegram_bot.admins``) may do everything; an administrator only what their own Telegram
rights allow (``can_restrict_members`` for mute/ban/kick/warn, ``can_delete_messages`` for
/del and /purge).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from telegram_bot.admins import Role, role_of
from telegram_bot.bot import bot_id
from telegram_bot.client import TelegramClient
from telegram_bot.state import KVStore

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

    def may(self, right: str) -> bool:
        if self.status == "creator":
            return True
        return self.can_restrict if right == RESTRICT else self.can_delete


def admins_key(chat_id: int) -> str:
    return f"mod:adm:{chat_id}"


def chat_admins(store: KVStore, client: TelegramClient, chat_id: int) -> dict[int, ChatAdmin]:
    """The chat's owner and administrators (the bot included when it is one)."""
    cached = store.get(admins_key(chat_id))
    if isinstance(cached, list):
        return {row[0]: ChatAdmin(*row) for row in cached}
    members = client.get_chat_administrators(chat_id=chat_id)
    admins = [_admin(member) for member in members]
    store.set(
        admins_key(chat_id),
        [[a.user_id, a.status, a.can_restrict, a.can_delete, a.username] for a in admins],
        ADMINS_TTL_MS,
    )
    return {admin.user_id: admin for admin in admins}


def forget_chat_admins(store: KVStore, chat_id: int) -> None:
    store.delete(admins_key(chat_id))


def _admin(member: dict[str, Any]) -> ChatAdmin:
    user = member.get("user") or {}
    return ChatAdmin(
        user_id=int(user.get("id", 0)),
        status=str(member.get("status")),
        can_restrict=bool(member.get(RESTRICT)),
        can_delete=bool(member.get(DELETE)),
        username=str(user.get("username") or "").lower(),
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
    admin = admins.get(user_id)
    if admin is not None:
        return (
            _("That is the chat's owner.") if admin.status == "creator" else _("That is an admin.")
        )
    if role_of(user_id) >= Role.ADMIN:
        return _("That is one of the bot's admins.")
    return None
