"""The KV store's value encoding: the prebuilt C encoders give exactly ``json.dumps``'s text."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from telegram_bot.state.base import InvalidValueError, compact_json_encoder, encode

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=30,
)


def canonical(value: Any) -> str:
    return json.dumps(
        value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False
    )


@given(json_values.filter(lambda value: value is not None))
def test_encode_is_canonical_json(value: Any) -> None:
    assert encode(value) == canonical(value)


@given(st.lists(st.lists(st.text(), max_size=4), max_size=6))
def test_the_packer_is_compact_json_in_order(rows: list[list[str]]) -> None:
    pack = compact_json_encoder(sort_keys=False, allow_nan=True)
    assert pack(rows) == json.dumps(rows, ensure_ascii=False, separators=(",", ":"))


def test_keys_are_sorted_only_when_asked() -> None:
    value = {"b": 1, "a": {"d": 2, "c": 3}}
    assert compact_json_encoder(sort_keys=True, allow_nan=False)(value) == (
        '{"a":{"c":3,"d":2},"b":1}'
    )
    assert compact_json_encoder(sort_keys=False, allow_nan=False)(value) == (
        '{"b":1,"a":{"d":2,"c":3}}'
    )


@pytest.mark.parametrize(
    "value",
    [float("nan"), [float("inf")], {"a": object()}, {1.5j}, b"bytes"],
    ids=["nan", "infinity", "object", "set", "bytes"],
)
def test_what_json_cannot_hold_is_refused(value: Any) -> None:
    with pytest.raises(InvalidValueError, match="not JSON-serialisable"):
        encode(value)


def test_a_value_that_contains_itself_is_refused() -> None:
    looped: list[Any] = [1]
    looped.append(looped)
    with pytest.raises(InvalidValueError, match="not JSON-serialisable"):
        encode(looped)
    assert encode([1, [2]]) == "[1,[2]]"  # and the encoder still works


def test_a_refused_value_leaves_nothing_behind() -> None:
    """The encoder keeps no state between calls: a container whose encoding failed half-way
    encodes once mended (circular-reference markers kept by the encoder would still hold it,
    and call it circular)."""
    container: list[Any] = [{"a": [1]}, object()]
    with pytest.raises(InvalidValueError):
        encode(container)
    container.pop()
    assert encode(container) == '[{"a":[1]}]'
