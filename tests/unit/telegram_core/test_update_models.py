"""The typed Update models: held against the Bot API specification, and what they accept."""

from __future__ import annotations

import json
import types
import typing
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from telegram_bot import updates
from telegram_bot.updates import (
    Message,
    Update,
    UpdateShapeError,
    parse_update,
    parse_update_json,
)
from tests.fakes.botapi_spec import find_spec_path

SAMPLES = Path(__file__).resolve().parents[2] / "fakes" / "botapi" / "updates"
SPEC = json.loads(find_spec_path().read_text())
# Our model -> the spec type(s) it stands for (ChatMember is a union told apart by status).
SPEC_TYPES = {
    "Message": ["Message", "InaccessibleMessage"],
    "ChatMember": [
        "ChatMemberOwner",
        "ChatMemberAdministrator",
        "ChatMemberMember",
        "ChatMemberRestricted",
        "ChatMemberLeft",
        "ChatMemberBanned",
    ],
}
PRIMITIVE = {"Integer": int, "String": str, "Boolean": bool}
MODELS = [
    obj
    for obj in vars(updates).values()
    if isinstance(obj, type)
    and issubclass(obj, updates.TelegramObject)
    and obj is not updates.TelegramObject
]


def spec_fields(model_name: str) -> dict[str, dict[str, Any]]:
    fields: dict[str, dict[str, Any]] = {}
    for spec_name in SPEC_TYPES.get(model_name, [model_name]):
        for spec_field in SPEC["types"][spec_name]["fields"]:
            fields.setdefault(spec_field["name"], spec_field)
    return fields


def python_types(annotation: Any) -> set[Any]:
    """The classes an annotation admits, through Annotated, unions, Optional and Literal."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return python_types(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return set().union(*(python_types(arg) for arg in typing.get_args(annotation)))
    if origin is typing.Literal:
        return {type(value) for value in typing.get_args(annotation)}
    if origin is list:
        return {("list", frozenset(python_types(typing.get_args(annotation)[0])))}
    return {annotation}


def expected_types(spec_type: str) -> set[Any]:
    if spec_type.startswith("Array of "):
        return {("list", frozenset(expected_types(spec_type.removeprefix("Array of "))))}
    if spec_type in PRIMITIVE:
        return {PRIMITIVE[spec_type]}
    if spec_type == "MaybeInaccessibleMessage":
        return {Message}
    return {getattr(updates, spec_type)}


@pytest.mark.parametrize("model", MODELS, ids=lambda model: model.__name__)
def test_every_field_matches_the_bot_api_specification(model: type[BaseModel]) -> None:
    """Name, type and required-ness of every field we read, as api.json declares them."""
    declared = spec_fields(model.__name__)
    for name, info in model.model_fields.items():
        wire_name = info.alias or name
        assert wire_name in declared, f"{model.__name__}.{wire_name} is not in the Bot API"
        spec_field = declared[wire_name]
        admitted = python_types(info.annotation) - {type(None)}
        assert admitted == expected_types(spec_field["types"][0]), f"{model.__name__}.{wire_name}"
        if spec_field["required"] and len(SPEC_TYPES.get(model.__name__, [1])) == 1:
            # A required field may be optional in our model only where it is a part we can
            # do without (a malformed one is dropped, never a crash in a handler).
            assert info.is_required() or model is Message, f"{model.__name__}.{wire_name}"


def test_the_update_kinds_we_type_are_update_fields() -> None:
    update_fields = {field["name"] for field in SPEC["types"]["Update"]["fields"]}
    assert set(updates.TYPED_KINDS) <= update_fields


@pytest.mark.parametrize("path", sorted(SAMPLES.glob("*.json")), ids=lambda path: path.stem)
def test_every_sample_update_parses_the_same_from_bytes_and_from_data(path: Path) -> None:
    body = path.read_bytes()
    update = parse_update_json(body)
    assert update == parse_update(json.loads(body))
    assert update.type != "unknown"
    assert update.type in updates.TYPED_KINDS
    assert parse_update(update.raw) == update  # what a dead letter keeps parses back


def test_unknown_fields_and_unknown_kinds_are_kept() -> None:
    update = parse_update(
        {
            "update_id": 5,
            "message": {
                "message_id": 1,
                "date": 1_700_000_000,
                "chat": {"id": -5, "type": "group", "future_flag": True},
                "brand_new_field": {"x": [1, 2]},
            },
        }
    )
    assert update.raw["message"]["brand_new_field"] == {"x": [1, 2]}
    assert update.raw["message"]["chat"]["future_flag"] is True
    poll = parse_update({"update_id": 6, "poll": {"id": "p"}})
    assert poll.type == "poll"
    assert poll.raw == {"update_id": 6, "poll": {"id": "p"}}


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ({"update_id": "1"}, "update_id"),
        ({"update_id": True}, "update_id"),
        ({"update_id": -1}, "update_id"),
        ({"update_id": 2**63}, "update_id"),
        ({"update_id": 1, "message": {"message_id": 1, "date": 10**15, "chat": {"id": 1}}}, ""),
        ({"update_id": 1, "message": {"message_id": 1, "date": 1, "chat": "x"}}, "message.chat"),
        ({"update_id": 1, "message": {"message_id": 2**63, "date": 1, "chat": {}}}, "message"),
        ({"update_id": 1, "callback_query": {"id": 5, "from": {}}}, "callback_query"),
        ({"update_id": 1, "message": {}, "edited_message": {}}, "message"),
        ({"update_id": 1, "message": [], "x": 1}, "message"),
    ],
)
def test_what_is_not_an_update_is_refused_with_where(body: dict[str, Any], where: str) -> None:
    with pytest.raises(UpdateShapeError) as refused:
        parse_update(body)
    assert str(refused.value).startswith(where)
    assert len(str(refused.value)) <= 200


def test_a_refusal_never_repeats_the_offending_value() -> None:
    with pytest.raises(UpdateShapeError) as refused:
        parse_update({"update_id": "secret-looking-value-123"})
    assert "secret-looking" not in str(refused.value)


@pytest.mark.parametrize(
    ("part", "value"),
    [
        ("from", {"id": 7, "is_bot": False, "first_name": 12345}),
        ("from", {"id": 2**64, "is_bot": False, "first_name": "x"}),
        ("entities", "not a list"),
        ("entities", [{"type": "bold", "offset": -1, "length": 2}]),
        ("reply_to_message", {"message_id": "7", "date": 1, "chat": {"id": 1, "type": "x"}}),
        ("voice", {"file_id": "v", "file_unique_id": "v", "duration": 2**40}),
        ("photo", [{"file_id": "p"}]),
        ("text", 12),
        ("new_chat_members", [{"id": "x"}]),
    ],
)
def test_a_malformed_optional_part_is_dropped_not_passed_on(part: str, value: Any) -> None:
    update = parse_update(
        {
            "update_id": 9,
            "message": {
                "message_id": 1,
                "date": 1_700_000_000,
                "chat": {"id": -100, "type": "supergroup"},
                part: value,
            },
        }
    )
    assert update.message is not None
    attribute = "from_user" if part == "from" else part
    assert getattr(update.message, attribute) is None


def test_deeply_nested_and_huge_bodies_are_refused_not_crashed() -> None:
    deep = b'{"update_id":1,"message":' + b'{"a":' * 5000 + b"1" + b"}" * 5000 + b"}"
    with pytest.raises(UpdateShapeError):
        parse_update_json(deep)
    with pytest.raises(UpdateShapeError):
        parse_update_json(b'{"update_id":' + b"9" * 4000 + b"}")
    with pytest.raises(UpdateShapeError):
        parse_update_json(b"\xff\xfe not json")


def test_the_accessors_read_every_kind() -> None:
    member = {"status": "member", "user": {"id": 3, "is_bot": False, "first_name": "M"}}
    update = parse_update(
        {
            "update_id": 3,
            "chat_member": {
                "chat": {"id": -7, "type": "supergroup"},
                "from": {"id": 4, "is_bot": False, "first_name": "A"},
                "date": 1_700_000_000,
                "old_chat_member": {**member, "status": "left"},
                "new_chat_member": member,
            },
        }
    )
    assert (update.type, update.chat_id, update.chat_type, update.user_id) == (
        "chat_member",
        -7,
        "supergroup",
        4,
    )
    assert update.effective_message is None and update.text == "" and update.command() is None
    assert isinstance(update, Update)


def test_a_nul_character_never_reaches_a_handler() -> None:
    """PostgreSQL text cannot hold U+0000: it is dropped at the edge."""
    update = parse_update_json(
        b'{"update_id": 4, "message": {"message_id": 1, "date": 1700000000,'
        b' "chat": {"id": 5, "type": "private", "first_name": "A\\u0000B"},'
        b' "from": {"id": 5, "is_bot": false, "first_name": "N\\u0000ul"},'
        b' "text": "/support x\\u0000y"}}'
    )
    assert update.message is not None and update.message.from_user is not None
    assert update.message.from_user.first_name == "Nul"
    assert update.message.text == "/support xy"
    assert update.message.chat.first_name == "AB"
