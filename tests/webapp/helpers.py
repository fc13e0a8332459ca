"""Helpers for the Mini App tests: initData and Login Widget answers signed as Telegram signs
them, made from a bot token by the test itself, and a described group."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from typing import Any
from urllib.parse import urlencode

from community.models import BotChat
from tests.fakes.telegram import FakeTelegramServer

GROUP, OTHER_GROUP = -100777, -100888
BOT_ID = 123456789
CREATOR, EDITOR, MODERATOR, PLAIN_ADMIN, MEMBER = 11, 12, 13, 14, 5005
DELETER = 15


def init_data(
    token: str,
    user_id: int,
    *,
    first_name: str = "Ann",
    language_code: str = "en",
    auth_date: int | None = None,
    start_param: str | None = None,
    query_id: str = "AAHdF6IQAAAAAN0XohDhrOrc",
) -> str:
    """A Mini App's initData, signed with ``token`` as Telegram documents."""
    user = {"id": user_id, "first_name": first_name, "language_code": language_code}
    fields = {
        "query_id": query_id,
        "user": json.dumps(user, separators=(",", ":")),
        "auth_date": str(int(time.time()) if auth_date is None else auth_date),
    }
    if start_param is not None:
        fields["start_param"] = start_param
    secret = hmac.new(b"WebAppData", token.encode(), hashlib.sha256).digest()
    check = "\n".join(f"{key}={fields[key]}" for key in sorted(fields))
    fields["hash"] = hmac.new(secret, check.encode(), hashlib.sha256).hexdigest()
    return urlencode(fields)


def widget_fields(token: str, user_id: int, *, auth_date: int | None = None) -> dict[str, str]:
    fields = {
        "id": str(user_id),
        "first_name": "Ann",
        "username": "ann",
        "auth_date": str(int(time.time()) if auth_date is None else auth_date),
    }
    check = "\n".join(f"{key}={fields[key]}" for key in sorted(fields))
    secret = hashlib.sha256(token.encode()).digest()
    fields["hash"] = hmac.new(secret, check.encode(), hashlib.sha256).hexdigest()
    return fields


def describe_groups(bot: FakeTelegramServer) -> None:
    """GROUP: creator 11, 12 may change info, 13 may restrict, 14 an admin without those
    rights, 15 may delete messages, 5005 a member; OTHER_GROUP: 11 is only a member there,
    21 its creator."""
    for chat_id, title in ((GROUP, "Test group"), (OTHER_GROUP, "Other group")):
        bot.set_chat(chat_id, "supergroup", title=title)
        bot.set_chat_member(
            chat_id,
            BOT_ID,
            "administrator",
            is_bot=True,
            can_restrict_members=True,
            can_delete_messages=True,
        )
        BotChat.objects.update_or_create(
            chat_id=chat_id,
            defaults={
                "title": title,
                "chat_type": "supergroup",
                "status": "administrator",
                "is_member": True,
            },
        )
    bot.set_chat_member(GROUP, CREATOR, "creator", first_name="Olga")
    bot.set_chat_member(GROUP, EDITOR, "administrator", first_name="Ed", can_change_info=True)
    bot.set_chat_member(
        GROUP, MODERATOR, "administrator", first_name="Mo", can_restrict_members=True
    )
    bot.set_chat_member(GROUP, PLAIN_ADMIN, "administrator", first_name="Pa")
    bot.set_chat_member(GROUP, DELETER, "administrator", first_name="Del", can_delete_messages=True)
    bot.set_chat_member(GROUP, MEMBER, "member", first_name="Mallory")
    bot.set_chat_member(OTHER_GROUP, 21, "creator", first_name="Oscar")
    bot.set_chat_member(OTHER_GROUP, CREATOR, "member", first_name="Olga")


def login(client: Any, token: str, user_id: int, **extra: Any) -> Any:
    """Open a Mini App session in the Django test client."""
    return client.post("/app/login/", {"init_data": init_data(token, user_id, **extra)})
