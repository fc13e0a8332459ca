"""Which chats a Mini App user may see, and what they may change there: Telegram decides.

A user sees a chat only while they are its creator or one of its administrators and the bot is
in it (``community.BotChat``), as ``getChatAdministrators`` says, cached ``LIST_TTL_MS`` in the
KV state (``miniapp:adm:<chat>``). Before every change the user's own ``getChatMember`` is
asked again, uncached (``access_for_change``): an admin demoted after the page loaded is
refused. The bot's owner and admins (``telegram_bot.admins``) see every chat the bot is in,
with every right.

Rights follow Telegram's: ``can_restrict_members`` for moderation settings, member actions and
the chat rules, ``can_change_info`` for the welcome, goodbye and rules texts,
``can_delete_messages`` for cleaning, the creator for shared ban lists.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from django.http import Http404

from community.models import BotChat
from telegram_bot.admins import Role, role_of
from telegram_bot.bot import get_client
from telegram_bot.errors import TelegramApiError
from telegram_bot.state import get_store

log = logging.getLogger(__name__)
LIST_TTL_MS = 30_000
RESTRICT, INFO, DELETE, CREATOR = "restrict", "info", "delete", "creator"
TELEGRAM_RIGHTS = {
    RESTRICT: "can_restrict_members",
    INFO: "can_change_info",
    DELETE: "can_delete_messages",
}
ALL_RIGHTS = frozenset({RESTRICT, INFO, DELETE, CREATOR})


@dataclass(frozen=True)
class ChatAccess:
    chat_id: int
    title: str
    rights: frozenset[str] = field(default_factory=frozenset)
    bot_admin: bool = False  # the bot's owner or admin, not the chat's

    def may(self, right: str) -> bool:
        return right in self.rights


def bot_chats() -> list[BotChat]:
    """The groups the bot is in."""
    return list(
        BotChat.objects.filter(is_member=True, chat_type__in=("group", "supergroup")).order_by(
            "title", "chat_id"
        )
    )


def my_chats(user_id: int) -> list[ChatAccess]:
    """The groups ``user_id`` may open, by title."""
    found = []
    for chat in bot_chats():
        access = _access(user_id, chat, fresh=False)
        if access is not None:
            found.append(access)
    return found


def access_for_view(user_id: int, chat_id: int) -> ChatAccess:
    """``user_id``'s access to ``chat_id`` (the cached admin list); 404 without it."""
    return _found(user_id, chat_id, fresh=False)


def access_for_change(user_id: int, chat_id: int) -> ChatAccess:
    """As ``access_for_view``, with the user's rights asked of Telegram now (getChatMember)."""
    return _found(user_id, chat_id, fresh=True)


def _found(user_id: int, chat_id: int, *, fresh: bool) -> ChatAccess:
    chat = (
        BotChat.objects.filter(
            chat_id=chat_id, is_member=True, chat_type__in=("group", "supergroup")
        )
        .only("chat_id", "title")
        .first()
    )
    access = _access(user_id, chat, fresh=fresh) if chat is not None else None
    if access is None:
        raise Http404
    return access


def _access(user_id: int, chat: BotChat, *, fresh: bool) -> ChatAccess | None:
    title = chat.title or str(chat.chat_id)
    if role_of(user_id) >= Role.ADMIN:
        return ChatAccess(chat.chat_id, title, ALL_RIGHTS, bot_admin=True)
    try:
        member = _member_now(chat.chat_id, user_id) if fresh else _listed(chat.chat_id, user_id)
    except TelegramApiError as exc:
        log.warning("mini app: chat %s not readable: %s", chat.chat_id, exc.description)
        return None
    if member is None:
        return None
    return ChatAccess(chat.chat_id, title, rights_of(member))


def rights_of(member: dict[str, Any]) -> frozenset[str]:
    """The rights of a ChatMember; empty unless an administrator or the creator."""
    status = member.get("status")
    if status == "creator":
        return ALL_RIGHTS
    if status != "administrator":
        return frozenset()
    return frozenset(name for name, field_ in TELEGRAM_RIGHTS.items() if member.get(field_) is True)


def is_admin_member(member: dict[str, Any] | None) -> bool:
    return member is not None and member.get("status") in ("creator", "administrator")


def _listed(chat_id: int, user_id: int) -> dict[str, Any] | None:
    store = get_store()
    key = f"miniapp:adm:{chat_id}"
    admins = store.get(key)
    if not isinstance(admins, list):
        admins = [
            {k: v for k, v in member.items() if k != "user"} | {"id": member["user"]["id"]}
            for member in get_client().get_chat_administrators(chat_id=chat_id)
            if isinstance(member.get("user"), dict)
        ]
        store.set(key, admins, ttl_ms=LIST_TTL_MS)
    for member in admins:
        if isinstance(member, dict) and member.get("id") == user_id:
            return member if is_admin_member(member) else None
    return None


def _member_now(chat_id: int, user_id: int) -> dict[str, Any] | None:
    member = get_client().get_chat_member(chat_id=chat_id, user_id=user_id)
    if not is_admin_member(member):
        # Demoted: the cached list is dropped so the next page sees it too.
        get_store().delete(f"miniapp:adm:{chat_id}")
        return None
    return member
