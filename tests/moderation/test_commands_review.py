"""Moderation commands and the moderation panel against what a review found: a mention in
the reason, mistyped durations, stale buttons, forum topics, long arguments, races. Each test
failed on the code before its fix."""

from __future__ import annotations

import time

import pytest

from moderation.models import Warning
from telegram_bot.models import AuditEntry
from tests.builders import user
from tests.fakes.telegram import FakeTelegramServer
from tests.moderation.helpers import (
    GROUP,
    MEMBER,
    OTHER,
    answers,
    command,
    describe_group,
    ok_calls,
    run,
)

pytestmark = pytest.mark.django_db


# -- 1. a text mention in the reason becomes the target -------------------------------------


def test_a_text_mention_in_the_reason_does_not_replace_the_id_given(
    bot: FakeTelegramServer,
) -> None:
    """``/ban 5005 for harassing Bob`` where "Bob" is a text mention (a user without a
    username, picked from the mention menu): the member to ban is 5005, not Bob, the victim
    named in the reason. ``_target_from_arg`` takes the first text_mention entity anywhere in
    the message, whatever its offset."""
    describe_group(bot)
    text = f"/ban {MEMBER} for harassing Bob"
    update = command(text)
    update["message"]["entities"].append(
        {
            "type": "text_mention",
            "offset": text.index("Bob"),
            "length": 3,
            "user": user(OTHER, "Bob"),
        }
    )
    run(update)
    banned = [call.params["user_id"] for call in ok_calls(bot, "banChatMember")]
    assert banned == [MEMBER], f"banned {banned}, answered {answers(bot)}"


def test_a_text_mention_in_a_warn_reason_does_not_take_the_warning(
    bot: FakeTelegramServer,
) -> None:
    describe_group(bot)
    text = f"/warn {MEMBER} stop insulting Bob"
    update = command(text)
    update["message"]["entities"].append(
        {
            "type": "text_mention",
            "offset": text.index("Bob"),
            "length": 3,
            "user": user(OTHER, "Bob"),
        }
    )
    run(update)
    warned = list(Warning.objects.values_list("user_id", flat=True))
    assert warned == [MEMBER], f"warned {warned}, answered {answers(bot)}"


def test_a_text_mention_as_the_first_argument_is_the_target_and_its_words_not_the_reason(
    bot: FakeTelegramServer,
) -> None:
    describe_group(bot)
    text = "/ban \U0001f600Bob Smith spamming"  # the emoji is 2 UTF-16 units, as offsets count
    update = command(text)
    update["message"]["entities"].append(
        {"type": "text_mention", "offset": 5, "length": 11, "user": user(OTHER, "Bob")}
    )
    run(update)
    assert [call.params["user_id"] for call in ok_calls(bot, "banChatMember")] == [OTHER]
    assert AuditEntry.objects.get(action="ban").reason == "spamming"
