"""The bot's own chats: which groups and channels the bot is in, with what rights, from
``my_chat_member``; the owner is told when that changes; unlisted chats are left on request.

Each change is applied to the ``BotChat`` row under a row lock, and only when the event is not
older than the one recorded (Telegram may deliver them late or again). What the owner is told
comes from the difference between the row and the event, so a re-delivered update finds no
difference and tells nothing twice. The bot sees ``my_chat_member`` also from chats outside
``ALLOWED_CHAT_IDS`` (``security.chat_allowed``): there it says it is not available and leaves
when ``LEAVE_UNLISTED_CHATS`` is on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from community.models import BotChat
from telegram_bot.bot import get_client
from telegram_bot.errors import TelegramApiError
from telegram_bot.languages import chat_language, recipient_language
from telegram_bot.state import get_store
from telegram_bot.updates import ChatMember, ChatMemberUpdated

log = logging.getLogger(__name__)

# The administrator rights the features need, and what for.
NEEDED_RIGHTS = {
    "can_restrict_members": gettext_lazy("captcha and moderation"),
    "can_delete_messages": gettext_lazy(
        "captcha, cleaning join/leave messages, the previous welcome"
    ),
    "can_invite_users": gettext_lazy("join requests"),
}
NOT_AVAILABLE = gettext_lazy("This bot is not available in this chat. Goodbye!")


@dataclass(frozen=True)
class BotChatChange:
    added: bool
    removed: bool
    lost: list[str]
    chat: BotChat


def is_inside(member: ChatMember) -> bool:
    if member.status == "restricted":
        return bool(member.is_member)
    return member.status in ("creator", "administrator", "member")


def rights_of(member: ChatMember) -> dict[str, bool]:
    """The ``can_*`` rights the member object grants (an admin's; none for a member)."""
    if member.status == "creator":
        return dict.fromkeys(NEEDED_RIGHTS, True)
    data = member.model_dump()
    return {key: value for key, value in sorted(data.items()) if key.startswith("can_") and value}


def bot_chat_changed(update: ChatMemberUpdated) -> BotChatChange | None:
    """Record the bot's new membership; tell the owner what changed; leave an unlisted chat."""
    change = _record(update)
    if change is None:
        return None
    chat = change.chat
    name = f"{chat.title or chat.chat_id} ({chat.chat_id})"
    unlisted = bool(settings.ALLOWED_CHAT_IDS) and chat.chat_id not in settings.ALLOWED_CHAT_IDS
    if change.added:
        missing = [right for right in NEEDED_RIGHTS if not chat.rights.get(right)]

        def added() -> str:
            text = _("The bot was added to %(chat)s as %(status)s by %(who)s.") % {
                "chat": name,
                "status": chat.status,
                "who": update.from_user.full_name,
            }
            if missing:
                text += " " + _("Rights it does not have: %(rights)s.") % {
                    "rights": _describe(missing)
                }
            if unlisted and settings.LEAVE_UNLISTED_CHATS:
                text += " " + _("This chat is not in ALLOWED_CHAT_IDS: the bot leaves it.")
            elif unlisted:
                text += " " + _("This chat is not in ALLOWED_CHAT_IDS.")
            return text

        _tell_owner(added)
    elif change.removed:
        _tell_owner(
            lambda: (
                _("The bot was removed from %(chat)s (%(status)s).")
                % {"chat": name, "status": chat.status}
            )
        )
    elif change.lost:
        _tell_owner(
            lambda: (
                _("The bot lost rights in %(chat)s: %(rights)s.")
                % {"chat": name, "rights": _describe(change.lost)}
            )
        )
    if change.added and unlisted and settings.LEAVE_UNLISTED_CHATS:
        _leave(chat)
    return change


def _record(update: ChatMemberUpdated) -> BotChatChange | None:
    member = update.new_chat_member
    with transaction.atomic():
        row = BotChat.objects.select_for_update().filter(chat_id=update.chat.id).first()
        if row is not None and update.date < row.event_date:
            return None  # older than what we know
        was_inside = row.is_member if row is not None else is_inside(update.old_chat_member)
        old_rights = row.rights if row is not None else rights_of(update.old_chat_member)
        row = row or BotChat(chat_id=update.chat.id)
        new_rights = rights_of(member)
        if (
            row.pk is not None
            and row.status == member.status
            and row.rights == new_rights
            and row.event_date == update.date
        ):
            return None  # the same event again
        row.title = (update.chat.title or update.chat.username or "")[:128]
        row.chat_type = update.chat.type[:20]
        row.status = member.status
        row.is_member = is_inside(member)
        row.rights = new_rights
        row.event_date = update.date
        row.save()
    lost = [r for r in NEEDED_RIGHTS if old_rights.get(r) and not new_rights.get(r)]
    return BotChatChange(
        added=row.is_member and not was_inside,
        removed=was_inside and not row.is_member,
        lost=lost if row.is_member and was_inside else [],
        chat=row,
    )


def _describe(rights: list[str]) -> str:
    return "; ".join(f"{right} ({NEEDED_RIGHTS[right]})" for right in rights)


def _tell_owner(text: Callable[[], str]) -> None:
    """``text`` is written in the owner's language (as last seen by the bot)."""
    owner = settings.OWNER_TELEGRAM_ID
    if not owner:
        return
    try:
        with translation.override(recipient_language(get_store(), user_id=owner)):
            body = text()
        get_client().send_message(chat_id=owner, text=body)
    except TelegramApiError as exc:
        log.warning("the owner was not told about a chat of the bot: %s", exc)


def _leave(chat: BotChat) -> None:
    client = get_client()
    try:
        if chat.chat_type != "channel":
            with translation.override(chat_language(chat.chat_id)):
                client.send_message(chat_id=chat.chat_id, text=str(NOT_AVAILABLE))
        client.leave_chat(chat_id=chat.chat_id)
    except TelegramApiError as exc:
        log.warning("could not leave unlisted chat %s: %s", chat.chat_id, exc)
