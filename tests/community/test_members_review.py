"""Members and the join-request question against what a review found: a rejoin within the
second of a captcha removal, a mute from before the join, a leave during the captcha,
placeholders in names, two questions at once. Each test failed on the code before its fix."""

from __future__ import annotations

import time
from typing import Any

from tests.community.helpers import press_update, succeeded
from tests.community.members_helpers import (
    GROUP,
    chat_member_update,
    join_update,
    make_policy,
    member,
    processed,
)
from tests.community.test_members_captcha import right_and_wrong
from tests.fakes.telegram import FAKE_TOKEN, FakeTelegramServer

ANN = 3001
BOT_ID = int(FAKE_TOKEN.split(":")[0])


def restricted(user_id: int, *, is_member: bool, first_name: str = "Ann") -> dict[str, Any]:
    """A ChatMember "restricted" that cannot send messages (muted), in or out of the chat."""
    return member(user_id, "restricted", first_name, is_member=is_member)


def muted_in_fake(bot: FakeTelegramServer, user_id: int = ANN) -> bool:
    state = bot.chat_member(GROUP, user_id)
    return state["status"] == "restricted" and not state.get("can_send_messages")


def mutes(bot: FakeTelegramServer, user_id: int = ANN) -> int:
    """restrictChatMember calls that take the member's right to write away (captcha)."""
    return sum(
        1
        for call in succeeded(bot, "restrictChatMember")
        if call.params["user_id"] == user_id
        and call.params["permissions"].get("can_send_messages") is False
    )


# --- 1. a rejoin in the same second as the removal escapes the captcha ---------------------------
def test_a_rejoin_within_the_second_of_the_captcha_removal_is_challenged_again(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    """A raid script presses a wrong button (or lets the deadline pass), is removed (ban, then
    unban) and joins again at once. Telegram's dates are whole seconds: the leave of the removal
    and the new join share one. The new join must get a new challenge, not pass unchallenged."""
    make_policy(captcha_enabled=True)
    now = int(time.time())
    processed(post_update, join_update(ANN, date=now - 5))
    assert mutes(bot) == 1
    _, wrong = right_and_wrong(bot)
    processed(post_update, press_update(wrong, user_id=ANN))
    assert [c.params["user_id"] for c in succeeded(bot, "banChatMember")] == [ANN]
    # What Telegram sends for the removal (ban, then unban) and the immediate rejoin.
    removal = chat_member_update(ANN, "restricted", "kicked", date=now, by=BOT_ID)
    removal["chat_member"]["new_chat_member"]["until_date"] = 0
    processed(post_update, removal)
    processed(post_update, chat_member_update(ANN, "kicked", "left", date=now, by=BOT_ID))
    processed(post_update, join_update(ANN, date=now))
    # The ban lifted the first challenge's restriction: the new stay must be challenged.
    assert mutes(bot) == 2, "the rejoin was taken for an old event and not challenged"


# --- 4. placeholders inside a member's name are expanded -----------------------------------------
def test_a_placeholder_in_a_members_name_is_not_expanded(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    """render() replaces the placeholders one after the other, so a value put in by an earlier
    one (the member's name) is itself searched for the later ones. A name of nine "{rules}"
    multiplies the rules into the welcome (past Telegram's 4,096: no welcome at all)."""
    make_policy(welcome_enabled=True, welcome_text="Hi {first_name}!", rules_text="Be kind. " * 100)
    processed(post_update, join_update(ANN, first_name="{rules}"))
    [call] = succeeded(bot, "sendMessage")
    assert call.params["text"] == "Hi {rules}!", call.params["text"][:80]
