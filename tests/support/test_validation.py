"""What the support desk accepts from messages and buttons, checked before anything is written."""

from __future__ import annotations

import pytest

from support.validation import Callback, check_callback, parse_ticket_number
from support.validation import check_message_content as _check
from telegram_bot.errors import ValidationError
from telegram_bot.updates import Message


def check_message_content(fields: dict[str, object]) -> object:
    """The check on a private message carrying ``fields`` (typed, as handlers get it)."""
    message = {"message_id": 1, "date": 1, "chat": {"id": 5, "type": "private"}, **fields}
    return _check(Message.model_validate(message))


def test_it_keeps_the_largest_photo_and_the_caption() -> None:
    content = check_message_content(
        {
            "photo": [
                {"file_id": "small", "file_unique_id": "s", "width": 90, "height": 90},
                {"file_id": "large", "file_unique_id": "l", "width": 800, "height": 600},
                {"file_id": "medium", "file_unique_id": "m", "width": 320, "height": 240},
            ],
            "caption": "  look  ",
        }
    )
    assert (content.kind, content.file_id, content.text) == ("photo", "large", "look")


def test_it_strips_text_and_counts_the_limit_on_what_was_sent() -> None:
    assert check_message_content({"text": "  hi  "}).text == "hi"
    assert check_message_content({"text": "x" * 4000}).kind == "text"
    with pytest.raises(ValidationError, match="4001"):
        check_message_content({"text": "x" * 4001})


@pytest.mark.parametrize(
    "message",
    [{"text": ""}, {"text": " \n "}, {"sticker": {"file_unique_id": "s"}}, {"location": {}}, {}],
)
def test_it_refuses_blank_text_and_unsupported_kinds(message: dict[str, object]) -> None:
    with pytest.raises(ValidationError) as refused:
        check_message_content(message)
    assert refused.value.user_message


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ("sup:reply:7", Callback("reply", 7)),
        ("sup:resolve:7", Callback("resolve", 7)),
        ("sup:resolve:7:2", Callback("resolve", 7, 2)),
        ("sup:view:7:3", Callback("view", 7, 3)),
        ("sup:list:4", Callback("list", 0, 4)),
        ("sup:close:9", Callback("close", 9)),
    ],
)
def test_it_reads_valid_button_data(data: str, expected: Callback) -> None:
    assert check_callback(data) == expected


@pytest.mark.parametrize(
    "data",
    [
        "sup:reply:",
        "sup:reply:0",
        "sup:reply:-1",
        "sup:reply:1:1",
        "sup:view:1",
        "sup:list:0",
        "sup:close:1:2",
        "sup:drop:1",
        "sup:reply:1 ",
        "sup:reply:" + "9" * 19,
    ],
)
def test_it_refuses_malformed_or_forged_button_data(data: str) -> None:
    with pytest.raises(ValidationError):
        check_callback(data)


@pytest.mark.parametrize(
    ("text", "number"), [("5", 5), ("#12", 12), (" 3 ", 3), ("0", None), ("x", None)]
)
def test_it_reads_ticket_numbers(text: str, number: int | None) -> None:
    assert parse_ticket_number(text) == number
