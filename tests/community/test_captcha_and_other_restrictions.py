"""The captcha beside the member's other restrictions: a rejoin within the second of a captcha
removal, a mute from before the join, a mute with an end, a leave or a ban during the captcha,
the restriction of an earlier stay. Each test failed on the code before its fix."""

from __future__ import annotations

import time
from typing import Any

from telegram_bot.jobs.runner import new_owner, run_due
from tests.community.helpers import make_jobs_due, press_update, succeeded
from tests.community.members_helpers import (
    GROUP,
    chat_member_update,
    join_update,
    make_policy,
    member,
    processed,
    sent_to,
)
from tests.community.test_members_captcha import right_and_wrong
from tests.fakes.telegram import FAKE_TOKEN, FakeTelegramServer

ANN = 3001
BOT_ID = int(FAKE_TOKEN.split(":")[0])


def restricted(user_id: int, *, is_member: bool, first_name: str = "Ann") -> dict[str, Any]:
    """A ChatMember "restricted" that cannot send messages (muted), in or out of the chat."""
    return member(user_id, "restricted", first_name, is_member=is_member)


def bot_may_restrict(bot: FakeTelegramServer) -> None:
    bot.set_chat_member(
        GROUP,
        BOT_ID,
        "administrator",
        is_bot=True,
        can_restrict_members=True,
        can_delete_messages=True,
        can_invite_users=True,
    )


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


def test_passing_the_captcha_does_not_lift_a_mute_the_member_had_before_joining(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    """Muted by a moderator, a member leaves and comes back: Telegram keeps the restriction
    (``restricted`` with ``is_member`` false, then true). The captcha restricts them again and,
    on the right button, grants every permission: the mute is gone."""
    bot_may_restrict(bot)
    bot.set_chat_member(GROUP, ANN, "restricted", first_name="Ann", is_member=True)  # muted
    assert muted_in_fake(bot)
    make_policy(captcha_enabled=True)
    rejoin = chat_member_update(ANN, "left", "restricted")
    rejoin["chat_member"]["old_chat_member"] = restricted(ANN, is_member=False)
    rejoin["chat_member"]["new_chat_member"] = restricted(ANN, is_member=True)
    assert processed(post_update, rejoin) == "processed"
    right, _ = right_and_wrong(bot)
    processed(post_update, press_update(right, user_id=ANN))
    assert muted_in_fake(bot), f"the moderator's mute was lifted: {bot.chat_member(GROUP, ANN)}"


def test_a_member_who_left_during_the_captcha_is_not_muted_when_let_back_in(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    """The outcome ``left`` deletes the challenge and lifts nothing. Telegram keeps the
    restriction of a member who left; back through a join request (no captcha by design), the
    member is welcomed and cannot write, with no challenge nor job left to free them."""
    bot_may_restrict(bot)
    make_policy(captcha_enabled=True, welcome_enabled=True, welcome_text="Hi {first_name}")
    now = int(time.time())
    processed(post_update, join_update(ANN, date=now - 60))
    assert muted_in_fake(bot)  # the captcha's restriction
    # Telegram keeps the restriction of a member who leaves.
    bot.set_chat_member(GROUP, ANN, "restricted", first_name="Ann", is_member=False)
    leave = chat_member_update(ANN, "restricted", "restricted", date=now - 30)
    leave["chat_member"]["new_chat_member"] = restricted(ANN, is_member=False)
    processed(post_update, leave)
    assert not muted_in_fake(bot)  # the captcha's restriction is lifted at the leave
    # Back, approved through a join request.
    back = chat_member_update(ANN, "left", "member", date=now, via_join_request=True)
    processed(post_update, back)
    bot.set_chat_member(GROUP, ANN, "member", first_name="Ann")
    assert sent_to(bot)[-1] == "Hi Ann"
    make_jobs_due()
    run_due(new_owner())
    assert not muted_in_fake(bot), "welcomed, yet still muted by the captcha of the earlier stay"


def test_a_mute_with_an_end_is_given_back_with_that_end_and_an_ended_one_not_at_all() -> None:
    from community.member_state import Challenge
    from community.services.members import FREED, _after_captcha

    muted = dict.fromkeys(FREED, False)

    def challenge(until: int) -> Challenge:
        restore = {"permissions": muted, "until": until}
        return Challenge("t", GROUP, ANN, "s", {}, "", [], 0, 0, restore=restore)

    later = int(time.time()) + 3600
    assert _after_captcha(challenge(later)) == (muted, later)
    assert _after_captcha(challenge(0)) == (muted, None)  # for good
    assert _after_captcha(challenge(int(time.time()) + 10)) == (FREED, None)  # ending: over
    assert _after_captcha(Challenge("t", GROUP, ANN, "s", {}, "", [], 0, 0)) == (FREED, None)


# --- 6. two join requests with a question at once: the second takes the first's answer ----------
CHAT_A, CHAT_B, REQUESTER = -100601, -100602, 2002


def test_captcha_of_an_earlier_stay_is_not_given_back_as_the_arrival_restriction(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    """The leave's lift of captcha 1 is rate limited (handed to the job) and the member
    joins again before it runs. Telegram reports the rejoin as ``restricted`` (captcha 1's own
    restriction, never lifted); that is stored as the restriction they "arrived with", and
    passing captcha 2 gave it back: muted for good, with no moderator having muted them."""
    bot_may_restrict(bot)
    make_policy(captcha_enabled=True)
    now = int(time.time())
    processed(post_update, join_update(ANN, date=now - 60))
    assert muted_in_fake(bot)  # captcha 1's restriction
    bot.set_chat_member(GROUP, ANN, "restricted", first_name="Ann", is_member=False)
    bot.fail_next("restrictChatMember", status=429, retry_after=5)  # the lift waits for its job
    leave = chat_member_update(ANN, "restricted", "restricted", date=now - 30)
    leave["chat_member"]["new_chat_member"] = restricted(ANN, is_member=False)
    processed(post_update, leave)
    # Back within the retry (a public group: no join request): still captcha 1's restriction.
    rejoin = chat_member_update(ANN, "restricted", "restricted", date=now)
    rejoin["chat_member"]["old_chat_member"] = restricted(ANN, is_member=False)
    rejoin["chat_member"]["new_chat_member"] = restricted(ANN, is_member=True)
    bot.set_chat_member(GROUP, ANN, "restricted", first_name="Ann", is_member=True)
    processed(post_update, rejoin)
    right = last_right_button(bot)
    processed(post_update, press_update(right, user_id=ANN))
    restricts = [
        (c.status, c.params["permissions"].get("can_send_messages"))
        for c in bot.calls_to("restrictChatMember")
    ]
    assert not muted_in_fake(bot), (
        f"passed the captcha, still muted by the earlier captcha: restrictChatMember {restricts}"
    )


def last_right_button(bot: FakeTelegramServer) -> str:
    """The right button of the newest challenge message."""
    call = [c for c in succeeded(bot, "sendMessage") if "mc:" in str(c.params.get("reply_markup"))][
        -1
    ]
    [row] = call.params["reply_markup"]["inline_keyboard"]
    return next(b["callback_data"] for b in row if f" {b['text']} within" in call.params["text"])


def test_a_ban_during_the_captcha_is_not_undone_by_lifting_the_captchas_restriction(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    """A member who leaves during the captcha has the captcha's restriction lifted. A ban is a
    leave too (``kicked``): the bot called restrictChatMember with every permission on the
    banned user, and in Telegram a ban is itself a restriction (MTProto's editBanned), which
    that replaces (the fake does not model it, hence the check on the calls)."""
    bot_may_restrict(bot)
    make_policy(captcha_enabled=True)
    now = int(time.time())
    processed(post_update, join_update(ANN, date=now - 60))
    assert muted_in_fake(bot)
    calls_before = len(bot.calls_to("restrictChatMember"))
    bot.set_chat_member(GROUP, ANN, "kicked", first_name="Ann")
    ban = chat_member_update(ANN, "restricted", "kicked", date=now - 30, by=42)
    ban["chat_member"]["new_chat_member"]["until_date"] = 0
    processed(post_update, ban)
    lifts = [
        c.params
        for c in bot.calls_to("restrictChatMember")[calls_before:]
        if c.params["user_id"] == ANN
    ]
    assert lifts == [], f"restrictChatMember on the banned member (lifts the ban): {lifts}"
