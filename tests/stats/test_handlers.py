"""``/stats`` in a group: today's and this week's most active members, rate limited."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.builders import make_message_update

GROUP = -100888


def say(post_update: Any, user_id: int, text: str = "hello", *, date: int | None = None) -> None:
    update = make_message_update(
        text, chat_id=GROUP, user_id=user_id, chat_type="supergroup", date=date or int(time.time())
    )
    assert post_update(update).status_code == 200


def replies(bot: Any) -> list[str]:
    return [call.params["text"] for call in bot.calls_to("sendMessage")]


def test_it_answers_stats_with_todays_and_this_weeks_top_members(
    bot: Any, post_update: Any
) -> None:
    for _ in range(3):
        say(post_update, 1, "one two")
    say(post_update, 2, "one")
    today = datetime.now(UTC).date()
    earlier = today - timedelta(days=1)
    if earlier.isocalendar()[:2] == today.isocalendar()[:2]:  # same week: user 2 leads it
        noon = int(datetime(earlier.year, earlier.month, earlier.day, 12, tzinfo=UTC).timestamp())
        for _ in range(5):
            say(post_update, 2, "words words words", date=noon)
    say(post_update, 3, "/stats")

    (text,) = replies(bot)
    today_part, week_part = text.split("\n\n")
    assert today_part.splitlines()[1:] == [
        "1. Test - 3 messages, 6 words",
        "2. Test - 1 message, 1 word",
    ]
    week_lines = week_part.splitlines()[1:]
    assert week_lines[0].startswith("1. Test - ")
    assert len(week_lines) == 2
    if earlier.isocalendar()[:2] == today.isocalendar()[:2]:
        assert week_lines[0] == "1. Test - 6 messages, 16 words"


def test_it_rate_limits_stats_in_a_chat(bot: Any, post_update: Any) -> None:
    say(post_update, 1, "hello")
    say(post_update, 3, "/stats")
    say(post_update, 4, "/stats")  # within the chat's cooldown: silence, not a reply storm
    assert len(replies(bot)) == 1


def test_it_says_so_when_nothing_was_counted(bot: Any, post_update: Any) -> None:
    say(post_update, 3, "/stats")
    assert replies(bot)[0].count("no messages yet") == 2
