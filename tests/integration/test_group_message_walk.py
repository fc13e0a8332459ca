"""The walk of one member's group message through the update path, in stops
(``tests/support/walk.py``: a stop is entering a function of another module of the project).
ARCHITECTURE.md (The update path) has the measured figures; run with ``-s`` to print the walk.

One group message enters each pipeline module once from a given caller: it is parsed once,
passes the security step once, is routed once, and each observer runs once.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from tests.builders import make_message_update
from tests.fakes.telegram import FakeTelegramServer
from tests.support.walk import Stop, Walk

GROUP = -100777


def _message(user_id: int) -> dict[str, Any]:
    return make_message_update(
        "hello everyone", chat_id=GROUP, chat_type="supergroup", user_id=user_id
    )


def _repeats(stops: list[Stop]) -> dict[tuple[str, str], int]:
    """(caller, module) pairs entered more than once."""
    pairs = Counter((stop.caller, stop.module) for stop in stops)
    return {pair: count for pair, count in pairs.items() if count > 1}


def _steps_twice(stops: list[Stop]) -> dict[tuple[str, str], int]:
    """(caller, function) entered more than once, the parsed update's accessors aside
    (reading a field of the update parsed once is not a step)."""
    pairs = Counter(
        (stop.caller, f"{stop.module}.{stop.function}")
        for stop in stops
        if stop.module != "telegram_bot.updates"
    )
    return {pair: count for pair, count in pairs.items() if count > 1}


def test_one_group_message_enters_each_pipeline_module_once(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    post_update(_message(5001))  # caches, lazy imports
    with Walk() as walk:
        response = post_update(_message(5002))
    assert response["X-Update-Outcome"] == "processed"
    pipeline = Walk.touching(walk.stops, "telegram_bot.pipeline.")
    entries = Counter(stop.module for stop in pipeline if stop.module.startswith("telegram_bot"))
    print(f"\nwhole update: {Walk.describe(walk.stops).splitlines()[0]}")
    print(f"the pipeline's own stops: {Walk.describe(pipeline)}")
    print("entries per module:", dict(entries))
    print("entered twice from one caller:", _repeats(pipeline))
    print("steps entered twice from one caller:", _steps_twice(walk.stops))
    from_pipeline = [s for s in walk.stops if s.caller.startswith("telegram_bot.pipeline.")]
    assert not _steps_twice(from_pipeline), Walk.describe(pipeline)
    declarations = [stop for stop in walk.stops if stop.function.startswith("foresee")]
    assert len(declarations) == len({stop.function for stop in declarations}), declarations
    # Each observer's own logic runs once: anti-flood's test of the message is not repeated.
    assert not [pair for pair in _steps_twice(walk.stops) if pair[0] == "moderation.flood"]
