"""A group's shared budget of interactions (RATE_LIMIT_CHAT_PER_MINUTE) is the members': once
they have spent it, the chat's own administrators still moderate. Before, three members
sending commands silenced every moderator's /ban for the rest of the minute, quietly."""

from __future__ import annotations

from typing import Any

import pytest

from telegram_bot.pipeline.process import Outcome
from tests.fakes.telegram import FakeTelegramServer
from tests.moderation.helpers import (
    GROUP,
    MEMBER,
    MOD,
    command,
    describe_group,
    member_message,
    ok_calls,
    run,
)
from tests.moderation.test_anonymous import ANON, anonymous_admin, as_the_group

pytestmark = pytest.mark.django_db


@pytest.fixture
def spent(bot: FakeTelegramServer, settings: Any) -> None:
    """The group's budget of 3 spent by members' commands."""
    settings.RATE_LIMIT_CHAT_PER_MINUTE = 3
    describe_group(bot)
    for sender in (5101, 5102, 5103):
        assert run(command("/help", sender=sender)) == Outcome.PROCESSED
    assert run(command("/help", sender=5104)) == Outcome.REFUSED  # the budget holds


def test_a_chat_admin_still_bans_once_members_spent_the_budget(
    bot: FakeTelegramServer, spent: None
) -> None:
    assert run(command("/ban spam", sender=MOD, reply_to=member_message())) == Outcome.PROCESSED
    assert [c.params["user_id"] for c in ok_calls(bot, "banChatMember")] == [MEMBER]
    assert bot.chat_member(GROUP, MEMBER)["status"] == "kicked"
    assert run(command("/help", sender=5105)) == Outcome.REFUSED  # members: still spent


def test_an_anonymous_admin_still_bans_once_members_spent_the_budget(
    bot: FakeTelegramServer, spent: None
) -> None:
    anonymous_admin(bot, ANON, can_restrict_members=True)
    assert run(as_the_group("/ban spam", reply_to_message=member_message())) == (Outcome.PROCESSED)
    assert bot.chat_member(GROUP, MEMBER)["status"] == "kicked"
