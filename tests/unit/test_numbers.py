"""ascii_int: the one check of a number written in outside input."""

from __future__ import annotations

import pytest

from telegram_bot.numbers import ascii_int


@pytest.mark.parametrize(
    ("text", "kwargs", "expected"),
    [
        ("42", {}, 42),
        ("007", {}, 7),
        ("9" * 18, {}, int("9" * 18)),
        ("9" * 19, {}, None),  # past 18 digits: may not fit in 64 bits
        ("9" * 19, {"digits": 19}, int("9" * 19)),
        ("\u00b2", {}, None),  # "²": a digit to str.isdigit(), refused by int()
        ("\u0663", {}, None),  # Arabic-Indic 3: int() would read it
        ("\uff11", {}, None),  # fullwidth 1
        ("", {}, None),
        ("-5", {}, None),
        ("-5", {"signed": True}, -5),
        ("-", {"signed": True}, None),
        ("--5", {"signed": True}, None),
        ("+5", {"signed": True}, None),
        (" 5", {}, None),
        ("5 ", {}, None),
        ("12", {"digits": 1}, None),
    ],
)
def test_ascii_int(text: str, kwargs: dict, expected: int | None) -> None:
    assert ascii_int(text, **kwargs) == expected
