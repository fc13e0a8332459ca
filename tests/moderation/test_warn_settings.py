"""Warnings (#40 item 10) through the webhook: /resetwarns removes a member's active warnings
once; /warnlimit, /warnmode and /warntime set the chat's limit, the action at the limit and
when warnings expire, validated with a short answer and audited."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from moderation.models import ChatSettings, Warning
from telegram_bot.models import AuditEntry
from tests.builders import next_update_id
from tests.fakes.telegram import FakeTelegramServer
from tests.moderation.helpers import GROUP, MEMBER, MOD, answers, describe_group, ok_calls
from tests.rules.helpers import command, said, send

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def group(bot: FakeTelegramServer) -> FakeTelegramServer:
    describe_group(bot)
    return bot


def warn(post_update: Any) -> None:
    command(post_update, "/warn", sender=MOD, reply_to_message=said("rude"))


def test_resetwarns_removes_the_active_warnings_once(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    warn(post_update)
    warn(post_update)
    update_id = next_update_id()
    message = said("x", user_id=MOD, name="Mo")
    message.update(
        text=f"/resetwarns {MEMBER}", entities=[{"type": "bot_command", "offset": 0, "length": 11}]
    )
    send(post_update, message, update_id=update_id)
    assert answers(bot)[-1] == f"Removed 2 warnings of {MEMBER}."
    assert send(post_update, message, update_id=update_id) == "duplicate"
    assert not Warning.objects.filter(revoked=False).exists()
    assert AuditEntry.objects.filter(action="resetwarns").count() == 1
    command(post_update, f"/resetwarns {MEMBER}", sender=MOD)
    assert answers(bot)[-1] == f"{MEMBER} has no warnings."


def test_the_limit_and_its_action_per_chat(bot: FakeTelegramServer, post_update: Any) -> None:
    command(post_update, "/warnlimit 2", sender=MOD)
    command(post_update, "/warnmode ban 1d", sender=MOD)
    assert answers(bot)[-2:] == ["Warning limit set to 2.", "At the limit: ban for 1d."]
    row = ChatSettings.objects.get(chat_id=GROUP)
    assert (row.warn_limit, row.warn_action, row.warn_action_seconds) == (2, "ban", 86400)
    warn(post_update)
    warn(post_update)
    [ban] = ok_calls(bot, "banChatMember")
    assert ban.params["user_id"] == MEMBER
    command(post_update, "/warnlimit", sender=MOD)
    assert answers(bot)[-1] == "Warning limit: 2, then ban for 1d."
    assert AuditEntry.objects.filter(action="settings", source="command").count() == 2


def test_warnings_expire_after_the_chats_period(bot: FakeTelegramServer, post_update: Any) -> None:
    command(post_update, "/warntime 7d", sender=MOD)
    assert answers(bot)[-1] == "Warnings now expire after 7 days."
    warn(post_update)
    warning = Warning.objects.get()
    lasts = warning.expires_at - warning.created_at
    assert abs(lasts - timedelta(days=7)) < timedelta(seconds=5)
    Warning.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    command(post_update, f"/warns {MEMBER}", sender=MOD)
    assert answers(bot)[-1] == f"{MEMBER} has no warnings."


def test_bad_arguments_get_a_short_answer(bot: FakeTelegramServer, post_update: Any) -> None:
    command(post_update, "/warnlimit 50", sender=MOD)
    command(post_update, "/warnmode explode", sender=MOD)
    command(post_update, "/warntime 90m", sender=MOD)
    command(post_update, "/warnlimit 2", sender=MEMBER)
    assert answers(bot) == [
        "The limit is a number from 1 to 20.",
        "Say what happens at the limit: /warnmode mute|ban|kick [duration].",
        "Give whole days from 1d to 365d, e.g. /warntime 30d.",
        "Only the chat's admins can do that.",
    ]
    assert not ChatSettings.objects.filter(chat_id=GROUP).exists()
