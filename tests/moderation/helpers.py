"""Helpers for the moderation tests: a described group, commands by reply, answers."""

from __future__ import annotations

import time
from typing import Any

from telegram_bot.pipeline.process import Outcome, process_update
from tests.builders import chat, make_message, make_message_update, next_update_id, user
from tests.fakes.telegram import FakeTelegramServer

GROUP = -100777
BOT_ID = 123456789
CHAT_OWNER, MOD, DELETER = 1, 2, 3
MEMBER, OTHER = 5005, 5006
FULL = {"can_restrict_members": True, "can_delete_messages": True}


def describe_group(bot: FakeTelegramServer, **bot_rights: bool) -> None:
    """Owner 1, admin 2 who may restrict, admin 3 who may only delete, the bot with
    ``bot_rights`` (all rights by default)."""
    bot.set_chat(GROUP, "supergroup", title="Test group")
    bot.set_chat_member(GROUP, CHAT_OWNER, "creator", first_name="Olga")
    bot.set_chat_member(GROUP, MOD, "administrator", first_name="Mo", can_restrict_members=True)
    bot.set_chat_member(
        GROUP,
        DELETER,
        "administrator",
        first_name="Del",
        username="deleter",
        can_delete_messages=True,
    )
    rights = bot_rights if bot_rights else FULL
    bot.set_chat_member(GROUP, BOT_ID, "administrator", is_bot=True, **rights)


def member_message(user_id: int = MEMBER, name: str = "Mallory", **extra: Any) -> dict[str, Any]:
    message = make_message("buy my stuff", chat_id=GROUP, user_id=user_id, **extra)
    message["from"] = user(user_id, name, username=name.lower())
    return message


def command(
    text: str,
    *,
    sender: int = MOD,
    reply_to: dict[str, Any] | None = None,
    update_id: int | None = None,
) -> dict[str, Any]:
    extra = {"reply_to_message": reply_to} if reply_to is not None else {}
    return make_message_update(text, chat_id=GROUP, user_id=sender, update_id=update_id, **extra)


def run(update: dict[str, Any]) -> Outcome:
    return process_update(update)


def answers(bot: FakeTelegramServer) -> list[str]:
    return [
        call.params["text"]
        for call in bot.calls_to("sendMessage")
        if call.params["chat_id"] == GROUP and not call.failed
    ]


def ok_calls(bot: FakeTelegramServer, method: str) -> list[Any]:
    return [call for call in bot.calls_to(method) if not call.failed]


def member_update(
    user_id: int, old: str, new: str, *, kind: str = "chat_member", by: int = CHAT_OWNER
) -> dict[str, Any]:
    """A chat_member (or my_chat_member) update: ``user_id`` went from ``old`` to ``new``."""

    def member(status: str) -> dict[str, Any]:
        data: dict[str, Any] = {"status": status, "user": user(user_id, "Someone")}
        if status == "administrator":
            data.update(can_be_edited=False, can_restrict_members=True)
        return data

    return {
        "update_id": next_update_id(),
        kind: {
            "chat": chat(GROUP, "supergroup"),
            "from": user(by, "Olga"),
            "date": int(time.time()),
            "old_chat_member": member(old),
            "new_chat_member": member(new),
        },
    }
