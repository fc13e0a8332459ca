"""Hostile bodies through the real webhook: never a 5xx, never a crash in a handler.

Updates are generated from the Bot API specification (``api.json``), valid first, then one
part is replaced by something hostile (the wrong type, an out-of-range number, a deep nest,
a huge string). Whatever comes, the answer is 200 or 400, and nothing ends as a dead letter
(the fake Bot API also refuses any call that breaks the spec, which would be a dead letter).
On PostgreSQL + Redis in CI (the KV store is the real Redis when ``REDIS_URL`` is set).
"""

from __future__ import annotations

import itertools
import json
import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from telegram_bot.state import KVStore, open_store, override_store
from telegram_bot.updates import TYPED_KINDS
from tests.conftest import OWNER_ID
from tests.fakes.botapi_spec import find_spec_path
from tests.fakes.telegram import FakeTelegramServer

SPEC = json.loads(find_spec_path().read_text())["types"]
STATUS_OF = {
    "ChatMemberOwner": "creator",
    "ChatMemberAdministrator": "administrator",
    "ChatMemberMember": "member",
    "ChatMemberRestricted": "restricted",
    "ChatMemberLeft": "left",
    "ChatMemberBanned": "kicked",
}
# Optional fields generated (beyond the required ones): what the product reads.
INTERESTING = {
    "Message": [
        "from",
        "text",
        "caption",
        "entities",
        "reply_to_message",
        "voice",
        "video_note",
        "photo",
        "document",
        "new_chat_members",
        "left_chat_member",
        "sender_chat",
        "reply_markup",
    ],
    "User": ["username", "last_name", "language_code"],
    "Chat": ["title", "username"],
    "CallbackQuery": ["data", "message"],
    "ChatJoinRequest": ["bio", "invite_link"],
}
TEXTS = ["/start", "/help", "/panel", "/support help me", "/stats", "/close", "hello", "x y z"]
_ids = itertools.count(7_000_000)


def value_of(
    type_name: str, depth: int, field_name: str = "", parent: str = ""
) -> st.SearchStrategy[Any]:
    if type_name.startswith("Array of "):
        inner = type_name.removeprefix("Array of ")
        return st.lists(value_of(inner, depth + 1, field_name, parent), min_size=1, max_size=2)
    if type_name == "Integer":
        if field_name == "date" or field_name.endswith("_date"):
            return st.integers(0, 2_000_000_000)
        if field_name in ("id", "user_chat_id"):
            return st.sampled_from([OWNER_ID, 1001, 2002, -1001, -100555])
        return st.integers(0, 2**31 - 1)
    if type_name == "String":
        if field_name == "type" and parent == "Chat":
            return st.sampled_from(["private", "group", "supergroup", "supergroup", "channel"])
        if field_name == "type":
            return st.sampled_from(["bold", "url", "bot_command", "mention"])
        if field_name in ("text", "data"):
            return st.sampled_from([*TEXTS, "sup:reply:1", "jr:a:x", "panel:home"]) | st.text(
                max_size=30
            )
        return st.text(max_size=12)
    if type_name == "Boolean":
        return st.booleans()
    if type_name == "MaybeInaccessibleMessage":
        return object_of("Message", depth)
    return object_of(type_name, depth)


def object_of(type_name: str, depth: int) -> st.SearchStrategy[Any]:
    spec = SPEC[type_name]
    if spec.get("subtypes"):
        return st.one_of(*(object_of(sub, depth) for sub in spec["subtypes"]))
    required = {f["name"]: f["types"][0] for f in spec["fields"] if f["required"]}
    wanted = INTERESTING.get(type_name, []) if depth < 3 else []
    optional = {f["name"]: f["types"][0] for f in spec["fields"] if f["name"] in wanted}
    strategy = st.fixed_dictionaries(
        {name: value_of(kind, depth + 1, name, type_name) for name, kind in required.items()},
        optional={
            name: value_of(kind, depth + 1, name, type_name) for name, kind in optional.items()
        },
    )
    if type_name == "Message" and depth == 0:  # mostly what members write: text from someone
        strategy = st.tuples(
            strategy, value_of("String", 1, "text"), object_of("User", depth + 1)
        ).map(lambda parts: {"text": parts[1], "from": parts[2], **parts[0]})
    if type_name in STATUS_OF:
        return strategy.map(lambda obj: {**obj, "status": STATUS_OF[type_name]})
    return strategy


def update_strategy() -> st.SearchStrategy[dict[str, Any]]:
    kinds = {
        "message": "Message",
        "edited_message": "Message",
        "callback_query": "CallbackQuery",
        "chat_join_request": "ChatJoinRequest",
        "chat_member": "ChatMemberUpdated",
        "my_chat_member": "ChatMemberUpdated",
    }
    assert set(kinds) == set(TYPED_KINDS)
    weighted = ["message"] * 6 + sorted(kinds)
    return st.sampled_from(weighted).flatmap(
        lambda kind: object_of(kinds[kind], 0).map(lambda obj: {"update_id": 0, kind: obj})
    )


HOSTILE = st.one_of(
    st.text(max_size=5),
    st.integers(min_value=2**63, max_value=2**80),
    st.integers(max_value=-1),
    st.floats(allow_nan=False),
    st.booleans(),
    st.none(),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.just({"a": {"b": {"c": {"d": [[[[[]]]]]}}}}),
    st.just("x" * 5000),
    st.just(10**15),
)


def paths(node: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if prefix:
        yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from paths(value, (*prefix, index))


def replaced(node: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    head, *rest = path
    copy = dict(node) if isinstance(node, dict) else list(node)
    copy[head] = replaced(node[head], tuple(rest), value)
    return copy


@st.composite
def hostile_updates(draw: st.DrawFn) -> dict[str, Any]:
    update = draw(update_strategy())
    update["update_id"] = next(_ids)
    if draw(st.booleans()):  # half of them stay valid: handlers must cope with those too
        candidates = [path for path in paths(update) if path != ("update_id",)]
        path = draw(st.sampled_from(candidates))
        update = replaced(update, path, draw(HOSTILE))
    return update


@pytest.fixture
def ci_store(settings: Any) -> Iterator[KVStore]:
    """The real Redis when REDIS_URL is set (CI), else a memory store."""
    url = os.environ.get("REDIS_URL")
    store = open_store(url, prefix=f"t{uuid.uuid4().hex[:10]}:") if url else open_store("memory://")
    with override_store(store):
        yield store
    client = getattr(store, "client", None)
    if client is not None:
        for key in client.scan_iter(match=f"{store.prefix}*", count=500):  # type: ignore[attr-defined]
            client.delete(key)


@pytest.mark.django_db(transaction=True)
@settings(
    max_examples=int(os.environ.get("HOSTILE_EXAMPLES", "120")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(body=hostile_updates())
def test_no_generated_or_mutated_update_gives_a_5xx_or_a_dead_letter(
    live_bot: FakeTelegramServer, ci_store: KVStore, post_update: Any, body: dict[str, Any]
) -> None:
    live_bot.reset()
    response = post_update(body)
    assert response.status_code in (200, 400), (response.status_code, response.content, body)
    if response.status_code == 200:
        assert response["X-Update-Outcome"] != "dead_letter", body
    assert list(ci_store.scan_all("dlq:")) == [], body
    rejected = [call for call in live_bot.calls if call.failed]
    assert rejected == [], rejected


def test_a_deep_nest_and_a_huge_update_id_are_400(bot: FakeTelegramServer, client: Any) -> None:
    from tests.conftest import WEBHOOK_SECRET

    bodies = [
        b'{"update_id":1,"message":' + b'{"a":' * 3000 + b"1" + b"}" * 3000 + b"}",
        b'{"update_id":' + b"9" * 4000 + b"}",
        b'{"update_id":1,"message":{"message_id":1,"date":1000000000000000,'
        b'"chat":{"id":1,"type":"private"}}}',
    ]
    for body in bodies:
        response = client.post(
            "/telegram/webhook",
            data=body,
            content_type="application/json",
            HTTP_X_TELEGRAM_BOT_API_SECRET_TOKEN=WEBHOOK_SECRET,
        )
        assert response.status_code == 400
        assert response.json()["error"].startswith("not a Telegram Update")
    assert bot.calls == []


def test_a_private_message_with_a_malformed_sender_is_handled_without_it(
    bot: FakeTelegramServer, post_update: Any, memory_store: KVStore
) -> None:
    update = {
        "update_id": next(_ids),
        "message": {
            "message_id": 5,
            "date": 1_700_000_000,
            "chat": {"id": 1001, "type": "private", "first_name": "T"},
            "from": {"id": 1001, "is_bot": False, "first_name": ["not", "a", "string"]},
            "text": "/start",
            "entities": "not a list",
        },
    }
    response = post_update(update)
    assert response.status_code == 200
    assert response["X-Update-Outcome"] in ("processed", "ignored")
    assert list(memory_store.scan_all("dlq:")) == []
