"""Routing: commands, mentions, callbacks, workflows, chat types; and the Update parser."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from telegram_bot.admins import Role
from telegram_bot.pipeline.router import ANY_COMMAND, PanelEntry, Route, Router, build_router
from telegram_bot.updates import UpdateShapeError, parse_update
from tests.builders import make_callback_update, make_join_request_update, make_message_update


def handler_named(name: str) -> Any:
    def handler(ctx: Any) -> None:
        return None

    handler.__name__ = name
    return handler


ROUTES = [
    Route.on_command("start", handler_named("start"), help="intro"),
    Route.on_command(
        "panel", handler_named("panel"), role=Role.ADMIN, help="panel", chat_types=("private",)
    ),
    Route.on_callback("jr:", handler_named("jr")),
    Route.on_callback("jr:ok:", handler_named("jr_ok")),
    Route.on_update("chat_join_request", handler_named("join")),
    Route.on_workflow("support_text", handler_named("support_text")),
    Route.on_update("message", handler_named("private"), chat_types=("private",)),
    Route.on_update("message", handler_named("group"), chat_types=("group", "supergroup")),
    Route.on_command(ANY_COMMAND, handler_named("unknown")),
]
router = Router(
    ROUTES,
    [
        PanelEntry("B", "b", order=2),
        PanelEntry("A", "a", order=1),
        PanelEntry("Owner", "o", role=Role.OWNER),
    ],
)


def matched(update: dict[str, Any], **kwargs: Any) -> str | None:
    route = router.match(parse_update(update), **kwargs)
    return route.handler.__name__ if route else None


def test_commands_route_by_name_and_chat_type() -> None:
    assert matched(make_message_update("/start")) == "start"
    assert matched(make_message_update("/START now")) == "start"
    assert matched(make_message_update("/start@fake_bot")) == "start"
    assert matched(make_message_update("/panel", chat_id=5)) == "panel"
    assert matched(make_message_update("/panel", chat_id=-5)) == "unknown"
    assert matched(make_message_update("/whatever")) == "unknown"


def test_callbacks_route_by_the_longest_prefix() -> None:
    assert matched(make_callback_update("jr:ok:1")) == "jr_ok"
    assert matched(make_callback_update("jr:no:1")) == "jr"
    assert matched(make_callback_update("other")) is None


def test_a_workflow_owner_gets_the_users_messages_but_not_commands() -> None:
    assert matched(make_message_update("my problem"), workflow="support_text") == "support_text"
    assert matched(make_message_update("/start"), workflow="support_text") == "start"
    assert matched(make_message_update("my problem"), workflow="unknown_flow") == "private"


def test_other_updates_route_by_type_and_chat_type() -> None:
    assert matched(make_join_request_update()) == "join"
    assert matched(make_message_update("hi", chat_id=5)) == "private"
    assert matched(make_message_update("hi", chat_id=-5)) == "group"
    assert matched(make_message_update("hi", chat_id=-5, chat_type="channel")) is None


def test_allowed_updates_help_and_panel_follow_the_routes() -> None:
    assert router.allowed_updates == ["callback_query", "chat_join_request", "message"]
    assert [r.command for r in router.commands_for(Role.USER)] == ["start"]
    assert [r.command for r in router.commands_for(Role.ADMIN)] == ["start", "panel"]
    assert [e.title for e in router.panel_for(Role.ADMIN)] == ["A", "B"]
    assert [e.title for e in router.panel_for(Role.OWNER)] == ["A", "B", "Owner"]


def test_the_catch_all_command_goes_last_whatever_the_module_order() -> None:
    built = build_router(["telegram_bot.handlers"])
    assert built.routes[-1].command == ANY_COMMAND


def test_commands_are_parsed_with_mention_and_arguments() -> None:
    command = parse_update(make_message_update("/addadmin@fake_bot  42 x")).command()
    assert command is not None
    assert (command.name, command.mention, command.args) == ("addadmin", "fake_bot", "42 x")
    assert parse_update(make_message_update("not /a command")).command() is None
    assert parse_update(make_message_update(None, caption="/start")).command() is None


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=5),
        lambda children: (
            st.lists(children, max_size=3)
            | st.dictionaries(st.text(max_size=8), children, max_size=3)
        ),
        max_leaves=10,
    )
)
def test_any_json_is_either_an_update_or_a_clear_shape_error(data: Any) -> None:
    try:
        update = parse_update(data)
    except UpdateShapeError as exc:
        assert str(exc)  # noqa: PT017 - the message must say what is wrong
        return
    assert isinstance(update.update_id, int)


@pytest.mark.parametrize(
    "kind", ["message", "edited_message", "callback_query", "chat_join_request"]
)
def test_handled_types_with_wrong_field_types_are_refused(kind: str) -> None:
    with pytest.raises(UpdateShapeError):
        parse_update({"update_id": 1, kind: {"chat": "x", "from": 5, "id": 3}})
