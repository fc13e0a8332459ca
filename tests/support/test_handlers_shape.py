"""The support handlers stay thin: each makes at most one call into the app, to the tickets
service (``services``), never to delivery, selectors or the panel directly."""

from __future__ import annotations

import ast
import inspect

from support import handlers

LOWER = {"delivery", "selectors", "panel"}


def _calls_into_the_app(function: ast.FunctionDef) -> list[str]:
    calls = []
    for node in ast.walk(function):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            if isinstance(owner, ast.Name) and owner.id in LOWER | {"services"}:
                calls.append(f"{owner.id}.{node.func.attr}")
    return calls


def test_every_handler_makes_one_call_to_the_tickets_service() -> None:
    tree = ast.parse(inspect.getsource(handlers))
    routed = {route.handler.__name__ for route in handlers.ROUTES}
    functions = {
        node.name: node
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name in routed
    }
    assert set(functions) == routed
    for name, function in functions.items():
        calls = _calls_into_the_app(function)
        assert len(calls) <= 1, (name, calls)
        assert all(call.startswith("services.") for call in calls), (name, calls)
    # The helpers (reading the update, rendering) reach no lower layer either; the one
    # exception links a sent prompt to its ticket, which needs the message Telegram returned.
    helpers = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
    for function in helpers:
        lower = [
            call
            for call in _calls_into_the_app(function)
            if not call.startswith("services.") and call != "delivery.link_admin_message"
        ]
        assert lower == [], (function.name, lower)
