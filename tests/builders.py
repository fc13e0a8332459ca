"""Update builders: realistic Telegram Update payloads with the fields tests care about."""

from __future__ import annotations

import itertools
import time
from typing import Any

_ids = itertools.count(10_000)
_message_ids = itertools.count(500)


def next_update_id() -> int:
    return next(_ids)


def user(user_id: int, first_name: str = "Test", username: str | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": user_id,
        "is_bot": False,
        "first_name": first_name,
        "language_code": "en",
    }
    if username:
        data["username"] = username
    return data


def chat(chat_id: int, chat_type: str | None = None, title: str = "Test group") -> dict[str, Any]:
    chat_type = chat_type or ("private" if chat_id > 0 else "supergroup")
    data: dict[str, Any] = {"id": chat_id, "type": chat_type}
    if chat_type == "private":
        data["first_name"] = "Test"
    else:
        data["title"] = title
    return data


def make_message(
    text: str | None = "hello",
    *,
    chat_id: int = 1001,
    user_id: int = 1001,
    chat_type: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    message: dict[str, Any] = {
        "message_id": next(_message_ids),
        "date": int(time.time()),
        "chat": chat(chat_id, chat_type),
        "from": user(user_id),
    }
    if text is not None:
        message["text"] = text
        if text.startswith("/"):
            length = len(text.split()[0])
            message["entities"] = [{"type": "bot_command", "offset": 0, "length": length}]
    message.update(extra)
    return message


def make_message_update(
    text: str | None = "hello", *, update_id: int | None = None, **kwargs: Any
) -> dict[str, Any]:
    return {
        "update_id": update_id if update_id is not None else next_update_id(),
        "message": make_message(text, **kwargs),
    }


def make_edited_message_update(text: str = "edited", **kwargs: Any) -> dict[str, Any]:
    message = make_message(text, **kwargs)
    message["edit_date"] = message["date"] + 5
    return {"update_id": next_update_id(), "edited_message": message}


def make_callback_update(
    data: str,
    *,
    user_id: int = 1001,
    chat_id: int | None = None,
    message_id: int = 77,
    update_id: int | None = None,
) -> dict[str, Any]:
    chat_id = user_id if chat_id is None else chat_id
    return {
        "update_id": update_id if update_id is not None else next_update_id(),
        "callback_query": {
            "id": f"cb{next(_ids)}",
            "from": user(user_id),
            "chat_instance": "-123456789",
            "data": data,
            "message": {
                "message_id": message_id,
                "date": int(time.time()),
                "chat": chat(chat_id),
                "text": "panel",
                "from": {"id": 123456789, "is_bot": True, "first_name": "Bot"},
            },
        },
    }


def make_join_request_update(
    *, user_id: int = 2002, chat_id: int = -100555, bio: str | None = None
) -> dict[str, Any]:
    request: dict[str, Any] = {
        "chat": chat(chat_id, "supergroup"),
        "from": user(user_id),
        "user_chat_id": user_id,
        "date": int(time.time()),
    }
    if bio:
        request["bio"] = bio
    return {"update_id": next_update_id(), "chat_join_request": request}
