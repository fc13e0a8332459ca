"""Connections: an admin's private chat with the bot standing in for one of their groups, so
that setting a group up (locks, blocklists, notes, warnings...) does not fill the group with
commands. ``/connect`` in the group (or ``/connect <group id>`` in private) connects, and the
commands wrapped by ``handlers.moderator_command`` sent in private then apply to that group,
the sender's rights there checked at each command as in the group (the chat's admin list,
dropped whenever Telegram reports an admin change). ``/disconnect`` ends it."""

from __future__ import annotations

from moderation.models import Connection


def connected(user_id: int | None) -> Connection | None:
    if user_id is None:
        return None
    return Connection.objects.filter(user_id=user_id).first()


def connect(user_id: int, chat_id: int, title: str) -> None:
    Connection.objects.update_or_create(
        user_id=user_id, defaults={"chat_id": chat_id, "chat_title": title[:200]}
    )


def disconnect(user_id: int) -> bool:
    return Connection.objects.filter(user_id=user_id).delete()[0] > 0


def forget_chat(chat_id: int) -> int:
    """The bot left the chat (or it moved): nobody stays connected to it."""
    return Connection.objects.filter(chat_id=chat_id).delete()[0]
