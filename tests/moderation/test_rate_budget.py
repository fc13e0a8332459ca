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


def test_without_a_cached_admin_list_telegram_is_asked_once_a_minute(
    bot: FakeTelegramServer, spent: None
) -> None:
    """A flood of refused commands while Telegram cannot give the admin list: one call,
    not one per refused command."""
    from moderation.rights import admins_key
    from telegram_bot.state import get_store

    get_store().delete(admins_key(GROUP))
    bot.fail_next("getChatAdministrators", times=10, status=429, retry_after=30)
    for sender in (5106, 5107, 5108):
        assert run(command("/help", sender=sender)) == Outcome.REFUSED
    assert len([c for c in bot.calls if c.method == "getChatAdministrators"]) == 1


def test_anonymous_admins_share_no_expensive_budget(bot: FakeTelegramServer, settings: Any) -> None:
    """The anonymous admins of every group write as one Telegram bot: its expensive budget
    (3 a minute) was all groups' anonymous admins' together."""
    settings.RATE_LIMIT_EXPENSIVE_PER_MINUTE = 1
    describe_group(bot)
    anonymous_admin(bot, ANON, can_restrict_members=True)
    for _ in range(3):
        assert run(as_the_group("/stats")) != Outcome.REFUSED


def test_a_group_with_a_positive_id_is_never_asked_for_its_admins(
    bot: FakeTelegramServer, settings: Any
) -> None:
    """A forged update calling chat 1000 a supergroup (group ids are negative): once its
    budget was spent, Telegram was asked for the admins of a private chat (a 400; found by the
    hostile-updates test on CI)."""
    settings.RATE_LIMIT_CHAT_PER_MINUTE = 1
    forged = []
    for sender in (5201, 5202, 5203):
        update = command("/help", sender=sender)
        update["message"]["chat"] = {"id": 1000, "type": "supergroup", "title": "forged"}
        forged.append(run(update))
    assert forged[-1] == Outcome.REFUSED
    assert [c for c in bot.calls if c.method == "getChatAdministrators"] == []
