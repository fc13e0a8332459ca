"""The test factories build what Telegram sends: every field they write is a field of its Bot
API type, every required field is there, and the product parses the result."""

from __future__ import annotations

import json
from typing import Any

import pytest

from telegram_bot.updates import parse_update
from tests import factories
from tests.fakes.botapi_spec import find_spec_path

SPEC = json.loads(find_spec_path().read_text())["types"]
# A field of a payload -> the Bot API type its value is.
NESTED = {
    "message": "Message",
    "edited_message": "Message",
    "callback_query": "CallbackQuery",
    "chat_join_request": "ChatJoinRequest",
    "chat": "Chat",
    "from": "User",
}


def problems(value: dict[str, Any], type_name: str, path: str = "$") -> list[str]:
    fields = {field["name"]: field for field in SPEC[type_name]["fields"]}
    found = [f"{path}.{name}: not a field of {type_name}" for name in value if name not in fields]
    found += [
        f"{path}.{name}: required by {type_name}, missing"
        for name, field in fields.items()
        if field["required"] and name not in value
    ]
    for name, nested in value.items():
        kind = NESTED.get(name)  # a callback's message: the Message the bot can still read
        if kind and isinstance(nested, dict):
            found += problems(nested, kind, f"{path}.{name}")
    return found


@pytest.mark.parametrize(
    "factory",
    [
        factories.MessageUpdateFactory,
        factories.EditedMessageUpdateFactory,
        factories.CallbackUpdateFactory,
        factories.JoinRequestUpdateFactory,
    ],
)
def test_each_update_factory_builds_what_the_bot_api_specifies(factory: Any) -> None:
    update = factory()
    assert problems(update, "Update") == []
    assert parse_update(update).update_id == update["update_id"]


def test_a_command_carries_its_entity_and_a_group_chat_its_title() -> None:
    message = factories.MessageFactory(text="/warn@bot spam", chat_id=-100, user_id=7)
    assert message["entities"] == [{"type": "bot_command", "offset": 0, "length": 9}]
    assert message["chat"] == {"id": -100, "type": "supergroup", "title": "Test group"}
    assert message["from"]["id"] == 7
    assert "text" not in factories.MessageFactory(text=None)  # absent, not null


def test_update_ids_follow_each_other_whatever_the_kind() -> None:
    first = factories.MessageUpdateFactory()["update_id"]
    ids = [factories.CallbackUpdateFactory()["update_id"], factories.MessageUpdateFactory()]
    assert ids[0] == first + 1 and ids[1]["update_id"] == first + 2
