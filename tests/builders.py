"""Update builders: the short call forms tests use, built by the factories in
``tests/factories.py`` (realistic Telegram Update payloads with the fields tests care about)."""

from __future__ import annotations

import itertools
from typing import Any

from tests.factories import (
    CallbackUpdateFactory,
    ChatFactory,
    EditedMessageUpdateFactory,
    JoinRequestUpdateFactory,
    MessageFactory,
    MessageUpdateFactory,
    UserFactory,
)

_ids = itertools.count(1_000_000)


def next_update_id() -> int:
    """An update id no factory hands out (theirs count from 10,000 up)."""
    return next(_ids)


def user(user_id: int, first_name: str = "Test", username: str | None = None) -> dict[str, Any]:
    return UserFactory(id=user_id, first_name=first_name, username=username)


def chat(chat_id: int, chat_type: str | None = None, title: str = "Test group") -> dict[str, Any]:
    return ChatFactory(id=chat_id, group_title=title, **({"type": chat_type} if chat_type else {}))


def make_message(text: str | None = "hello", **kwargs: Any) -> dict[str, Any]:
    """``chat_id``, ``user_id`` (1001 each), ``chat_type``, and any other message field."""
    return MessageFactory(text=text, **kwargs)


def make_message_update(
    text: str | None = "hello", *, update_id: int | None = None, **kwargs: Any
) -> dict[str, Any]:
    ids = {} if update_id is None else {"update_id": update_id}
    return MessageUpdateFactory(**ids, message=make_message(text, **kwargs))


def make_edited_message_update(text: str = "edited", **kwargs: Any) -> dict[str, Any]:
    return EditedMessageUpdateFactory(
        **{f"edited_message__{key}": value for key, value in {"text": text, **kwargs}.items()}
    )


def make_callback_update(
    data: str,
    *,
    user_id: int = 1001,
    chat_id: int | None = None,
    message_id: int = 77,
    update_id: int | None = None,
) -> dict[str, Any]:
    ids = {} if update_id is None else {"update_id": update_id}
    press = {"data": data, "user_id": user_id, "message_id": message_id}
    if chat_id is not None:
        press["chat_id"] = chat_id
    return CallbackUpdateFactory(
        **ids, **{f"callback_query__{key}": value for key, value in press.items()}
    )


def make_join_request_update(
    *, user_id: int = 2002, chat_id: int = -100555, bio: str | None = None
) -> dict[str, Any]:
    return JoinRequestUpdateFactory(
        chat_join_request__user_id=user_id,
        chat_join_request__chat_id=chat_id,
        chat_join_request__bio=bio,
    )
