"""Count the "stops" of one update's walk through the project's code.

A stop is entering a function of another module of the project: a Python call whose function
lives in a project file (not ``.venv``, not ``tests/``) and whose nearest project caller on the
stack is in another module (or in none: Django calling the project). A call within one module
is not a stop; a stop into a module that is already further down the stack is a *climb back*
(A -> B -> A). Traced with ``sys.setprofile`` in the calling thread only (the fake Bot API
server's threads are not the product's code).

``python -m pytest tests/support/test_walk.py -s -p no:randomly -n 0`` prints the walk.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
_EXCLUDED = (ROOT / ".venv", ROOT / "tests")


@dataclass(frozen=True)
class Stop:
    caller: str  # the module of the nearest project frame below ("" from outside the project)
    module: str
    function: str
    climb: bool  # ``module`` is already on the stack below the caller


@dataclass
class Walk:
    """The stops made while tracing; ``mark`` notes the index of a stop that a predicate on
    the entered frame picks (the first one only)."""

    marker: Callable[[FrameType], bool] | None = None
    stops: list[Stop] = field(default_factory=list)
    marked: int | None = None
    _modules: dict[str, str | None] = field(default_factory=dict)

    def __enter__(self) -> Walk:
        sys.setprofile(self._profile)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.setprofile(None)

    def _module(self, filename: str) -> str | None:
        module = self._modules.get(filename, "?")
        if module != "?":
            return module
        path = Path(filename).resolve()
        found: str | None = None
        inside = path.suffix == ".py" and path.is_relative_to(ROOT)
        # Not the tests, nor any virtualenv kept in the checkout (.venv, CI's .venv-py3).
        parts = path.relative_to(ROOT).parts if inside else ()
        if (
            inside
            and not parts[0].startswith(".venv")
            and not any(path.is_relative_to(excluded) for excluded in _EXCLUDED)
        ):
            found = ".".join(parts).removesuffix(".py")
        self._modules[filename] = found
        return found

    def _profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or frame.f_code.co_name == "<module>":
            return
        module = self._module(frame.f_code.co_filename)
        if module is None:
            return
        below: list[str] = []
        back = frame.f_back
        while back is not None:
            other = self._module(back.f_code.co_filename)
            if other is not None:
                below.append(other)
            back = back.f_back
        caller = below[0] if below else ""
        if caller == module:
            return
        self.stops.append(Stop(caller, module, frame.f_code.co_name, module in below[1:]))
        if self.marked is None and self.marker is not None and self.marker(frame):
            self.marked = len(self.stops)

    @staticmethod
    def touching(stops: list[Stop], module_prefix: str) -> list[Stop]:
        """The stops into or out of modules starting with ``module_prefix`` (an app's walk;
        the core's calls among its own modules are the core's walk)."""
        return [
            stop
            for stop in stops
            if stop.module.startswith(module_prefix) or stop.caller.startswith(module_prefix)
        ]

    def within(self, module_prefix: str) -> list[Stop]:
        """The stops from the first entry into a module starting with ``module_prefix``."""
        for index, stop in enumerate(self.stops):
            if stop.module.startswith(module_prefix):
                return self.stops[index:]
        return []

    @staticmethod
    def describe(stops: list[Stop]) -> str:
        modules = {stop.module for stop in stops}
        climbs = sum(stop.climb for stop in stops)
        lines = [f"{len(stops)} stops in {len(modules)} modules, {climbs} climbs back"]
        for number, stop in enumerate(stops, 1):
            mark = "  (climb back)" if stop.climb else ""
            lines.append(f"{number:3} {stop.caller or '-'} -> {stop.module}.{stop.function}{mark}")
        return "\n".join(lines)


def telegram_call(method: str, chat_id: int) -> Callable[[FrameType], bool]:
    """A marker: the client's ``call`` of ``method`` to ``chat_id`` (the request goes out)."""

    def picks(frame: FrameType) -> bool:
        if frame.f_code.co_name != "call" or not frame.f_code.co_filename.endswith("core.py"):
            return False
        local = frame.f_locals
        params = local.get("params") or {}
        return bool(local.get("method") == method and params.get("chat_id") == chat_id)

    return picks
