"""The support handlers stay thin: each makes at most one call into the app (to
``conversation``), never to flows, services, selectors or the panel directly."""

from __future__ import annotations

import ast
import inspect

from support import handlers

LOWER = {"flows", "services", "selectors", "panel"}


def _calls_into_the_app(function: ast.FunctionDef) -> list[str]:
    calls = []
    for node in ast.walk(function):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            if isinstance(owner, ast.Name) and owner.id in LOWER | {"conversation"}:
                calls.append(f"{owner.id}.{node.func.attr}")
    return calls


def test_every_handler_makes_one_call_to_conversation() -> None:
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
        assert all(call.startswith("conversation.") for call in calls), (name, calls)
    helpers = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
    for function in helpers:
        lower = [c for c in _calls_into_the_app(function) if not c.startswith("conversation.")]
        assert lower == [], (function.name, lower)
