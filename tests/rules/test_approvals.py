"""Approved members through the webhook: /approve, /unapprove, /approved by an admin who may
restrict; an approved member is exempt from anti-flood and the captcha in that chat (the core's
exemption hook), not in another chat."""

from __future__ import annotations

from typing import Any

import pytest

from moderation import flood
from moderation.rules.models import Approval
from telegram_bot.models import AuditEntry
from tests.community.members_helpers import join_update, make_policy
from tests.fakes.telegram import FakeTelegramServer
from tests.moderation.helpers import (
    GROUP,
    MEMBER,
    MOD,
    OTHER,
    answers,
    describe_group,
    ok_calls,
)
from tests.rules.helpers import command, said, send

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def group(bot: FakeTelegramServer, monkeypatch: pytest.MonkeyPatch) -> FakeTelegramServer:
    describe_group(bot)
    monkeypatch.setattr(flood, "clock", lambda: 1_800_000_000.0)  # one flood window
    return bot


def test_approve_by_reply_lists_and_unapprove(bot: FakeTelegramServer, post_update: Any) -> None:
    replied = said("hi", user_id=MEMBER, name="Mallory")
    command(post_update, "/approve", sender=MOD, reply_to_message=replied)
    assert answers(bot)[-1].startswith("Mallory is approved")
    command(post_update, "/approve", sender=MOD, reply_to_message=replied)
    assert answers(bot)[-1] == "Mallory is approved already."
    command(post_update, "/approved", sender=MOD)
    assert answers(bot)[-1] == f"Approved members (1):\n- Mallory ({MEMBER})"
    command(post_update, f"/unapprove {MEMBER}", sender=MOD)
    assert answers(bot)[-1] == f"{MEMBER} is no longer approved."
    assert not Approval.objects.exists()
    assert list(
        AuditEntry.objects.filter(action__startswith="rules.").values_list("action", "target_id")
    ) == [("rules.unapprove", MEMBER), ("rules.approve", MEMBER)]


def test_approve_refuses_members_admins_and_nobody(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    command(post_update, f"/approve {OTHER}", sender=MEMBER)
    command(post_update, "/approve", sender=MOD)
    command(post_update, f"/approve {MOD}", sender=MOD)
    assert answers(bot) == [
        "Only the chat's admins can do that.",
        "Reply to the member's message, or give their @username or user id.",
        f"That is an admin. ({MOD})",
    ]
    assert not Approval.objects.exists()


def test_an_approved_member_is_exempt_from_anti_flood(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    command(post_update, f"/approve {MEMBER}", sender=MOD)
    for _ in range(12):
        send(post_update, said("chatter"))
    assert ok_calls(bot, "restrictChatMember") == []
    for _ in range(12):
        send(post_update, said("chatter", user_id=OTHER, name="Olive"))
    [mute] = ok_calls(bot, "restrictChatMember")
    assert mute.params["user_id"] == OTHER


def test_an_approved_member_joins_without_a_captcha(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    make_policy(captcha_enabled=True)
    command(post_update, f"/approve {MEMBER}", sender=MOD)
    post_update(join_update(MEMBER, chat_id=GROUP))
    assert ok_calls(bot, "restrictChatMember") == []
    post_update(join_update(OTHER, chat_id=GROUP))
    [restrict] = ok_calls(bot, "restrictChatMember")
    assert restrict.params["user_id"] == OTHER


def test_switched_off_the_rules_exempt_nobody(
    bot: FakeTelegramServer, post_update: Any, settings: Any
) -> None:
    command(post_update, f"/approve {MEMBER}", sender=MOD)
    settings.FEATURES_DISABLED = ["rules"]
    for _ in range(12):
        send(post_update, said("chatter"))
    [mute] = ok_calls(bot, "restrictChatMember")
    assert mute.params["user_id"] == MEMBER
