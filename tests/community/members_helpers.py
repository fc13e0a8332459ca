"""Builders of member updates (``chat_member`` and the join/leave service messages) and
helpers for the members tests."""

from __future__ import annotations

import time
from typing import Any

from community.models import MemberPolicy
from tests.builders import chat, next_update_id, user
from tests.factories import MemberPolicyFactory
from tests.fakes.telegram import FakeTelegramServer

GROUP = -100777
TITLE = "Cat lovers"


def member(user_id: int, status: str, first_name: str = "Ann", **fields: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"status": status, "user": user(user_id, first_name)}
    if status == "restricted":
        data.update(
            {
                "is_member": True,
                "can_send_messages": False,
                "until_date": 0,
            }
        )
    data.update(fields)
    return data


def chat_member_update(
    user_id: int,
    old: str,
    new: str,
    *,
    chat_id: int = GROUP,
    first_name: str = "Ann",
    date: int | None = None,
    by: int | None = None,
    **extra: Any,
) -> dict[str, Any]:
    change: dict[str, Any] = {
        "chat": chat(chat_id, "supergroup", TITLE),
        "from": user(by or user_id, first_name),
        "date": date if date is not None else int(time.time()),
        "old_chat_member": member(user_id, old, first_name),
        "new_chat_member": member(user_id, new, first_name),
    }
    change.update(extra)
    return {"update_id": next_update_id(), "chat_member": change}


def join_update(user_id: int, **kwargs: Any) -> dict[str, Any]:
    return chat_member_update(user_id, "left", "member", **kwargs)


def leave_update(user_id: int, **kwargs: Any) -> dict[str, Any]:
    return chat_member_update(user_id, "member", "left", **kwargs)


def service_update(
    *,
    joined: list[int] | None = None,
    left: int | None = None,
    chat_id: int = GROUP,
    first_name: str = "Ann",
    date: int | None = None,
    message_id: int = 900,
) -> dict[str, Any]:
    message: dict[str, Any] = {
        "message_id": message_id,
        "date": date if date is not None else int(time.time()),
        "chat": chat(chat_id, "supergroup", TITLE),
        "from": user((joined or [left or 1])[0], first_name),
    }
    if joined:
        message["new_chat_members"] = [user(uid, first_name) for uid in joined]
    if left is not None:
        message["left_chat_member"] = user(left, first_name)
    return {"update_id": next_update_id(), "message": message}


def make_policy(**fields: Any) -> MemberPolicy:
    policy: MemberPolicy = MemberPolicyFactory(**{"chat_id": GROUP, "title": TITLE, **fields})
    return policy


def sent_to(bot: FakeTelegramServer, chat_id: int = GROUP) -> list[str]:
    return [
        call.params["text"]
        for call in bot.calls_to("sendMessage")
        if call.params["chat_id"] == chat_id and not call.failed
    ]


def processed(post_update: Any, update: dict[str, Any]) -> str:
    response = post_update(update)
    assert response.status_code == 200, response.content
    return str(response["X-Update-Outcome"])
