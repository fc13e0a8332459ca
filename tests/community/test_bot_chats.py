"""The bot's own chats, end to end through the webhook: my_chat_member recorded with the
bot's rights, the owner told of additions, removals and lost rights (once, whatever the
re-deliveries), unlisted chats left when the operator asks for it."""

from __future__ import annotations

import time
from typing import Any

from community.models import BotChat
from telegram_bot.pipeline.router import get_router
from tests.builders import chat, next_update_id, user
from tests.community.members_helpers import processed, sent_to
from tests.conftest import OWNER_ID
from tests.fakes.telegram import FakeTelegramServer

CHAT = -100888
BOT_ID = 123456789
FULL = {
    "can_be_edited": False,
    "can_manage_chat": True,
    "can_delete_messages": True,
    "can_restrict_members": True,
    "can_promote_members": False,
    "can_change_info": False,
    "can_invite_users": True,
    "can_pin_messages": True,
    "is_anonymous": False,
    "can_manage_video_chats": False,
    "can_post_stories": False,
    "can_edit_stories": False,
    "can_delete_stories": False,
}


def bot_member(status: str, **rights: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "status": status,
        "user": {"id": BOT_ID, "is_bot": True, "first_name": "Bot", "username": "fake_bot"},
    }
    if status == "administrator":
        data.update(FULL)
    elif status == "kicked":
        data["until_date"] = 0
    data.update(rights)
    return data


def my_update(
    old: dict[str, Any], new: dict[str, Any], *, chat_id: int = CHAT, date: int | None = None
) -> dict[str, Any]:
    return {
        "update_id": next_update_id(),
        "my_chat_member": {
            "chat": chat(chat_id, "supergroup", "Dog lovers"),
            "from": user(OWNER_ID, "Olga"),
            "date": date if date is not None else int(time.time()),
            "old_chat_member": old,
            "new_chat_member": new,
        },
    }


def told(bot: FakeTelegramServer) -> list[str]:
    return sent_to(bot, OWNER_ID)


def test_my_chat_member_is_requested() -> None:
    assert "my_chat_member" in get_router().allowed_updates


def test_added_recorded_and_told_once(bot: FakeTelegramServer, post_update: Any) -> None:
    added = my_update(bot_member("left"), bot_member("administrator"))
    assert processed(post_update, added) == "processed"
    processed(post_update, dict(added, update_id=added["update_id"] + 100_000))
    row = BotChat.objects.get(chat_id=CHAT)
    assert (row.status, row.is_member, row.title) == ("administrator", True, "Dog lovers")
    assert row.rights["can_restrict_members"] and row.rights["can_delete_messages"]
    assert told(bot) == ["The bot was added to Dog lovers (-100888) as administrator by Olga."]


def test_added_as_a_member_says_which_rights_are_missing(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    processed(post_update, my_update(bot_member("left"), bot_member("member")))
    [text] = told(bot)
    assert "as member" in text and "can_restrict_members (captcha and moderation)" in text


def test_a_lost_right_and_the_removal_are_told(bot: FakeTelegramServer, post_update: Any) -> None:
    now = int(time.time())
    processed(post_update, my_update(bot_member("left"), bot_member("administrator"), date=now))
    demoted = my_update(
        bot_member("administrator"),
        bot_member("administrator", can_restrict_members=False),
        date=now + 1,
    )
    processed(post_update, demoted)
    processed(post_update, dict(demoted, update_id=demoted["update_id"] + 100_000))
    removed = my_update(bot_member("administrator"), bot_member("kicked"), date=now + 2)
    processed(post_update, removed)
    # Late: the addition delivered again after the removal changes nothing.
    processed(post_update, my_update(bot_member("left"), bot_member("administrator"), date=now))
    assert told(bot)[1:] == [
        "The bot lost rights in Dog lovers (-100888): can_restrict_members (captcha and "
        "moderation).",
        "The bot was removed from Dog lovers (-100888) (kicked).",
    ]
    row = BotChat.objects.get(chat_id=CHAT)
    assert (row.status, row.is_member) == ("kicked", False)


def test_an_unlisted_chat_is_left_when_the_operator_says_so(
    bot: FakeTelegramServer, post_update: Any, settings: Any
) -> None:
    settings.ALLOWED_CHAT_IDS = [-100111]
    settings.LEAVE_UNLISTED_CHATS = True
    processed(post_update, my_update(bot_member("left"), bot_member("member")))
    assert sent_to(bot, CHAT) == ["This bot is not available in this chat. Goodbye!"]
    [leave] = bot.calls_to("leaveChat")
    assert leave.params == {"chat_id": CHAT}
    assert "not in ALLOWED_CHAT_IDS: the bot leaves it." in told(bot)[0]
    assert BotChat.objects.get(chat_id=CHAT).is_member


def test_an_unlisted_chat_is_kept_when_leaving_is_off(
    bot: FakeTelegramServer, post_update: Any, settings: Any
) -> None:
    settings.ALLOWED_CHAT_IDS = [-100111]
    settings.LEAVE_UNLISTED_CHATS = False
    processed(post_update, my_update(bot_member("left"), bot_member("member")))
    assert bot.calls_to("leaveChat") == [] and sent_to(bot, CHAT) == []
    assert told(bot)[0].endswith("This chat is not in ALLOWED_CHAT_IDS.")


def test_a_listed_chat_is_not_left(
    bot: FakeTelegramServer, post_update: Any, settings: Any
) -> None:
    settings.ALLOWED_CHAT_IDS = [CHAT]
    settings.LEAVE_UNLISTED_CHATS = True
    processed(post_update, my_update(bot_member("left"), bot_member("member")))
    assert bot.calls_to("leaveChat") == []


def test_only_the_bots_own_membership_passes_the_chat_list(
    bot: FakeTelegramServer, post_update: Any, settings: Any
) -> None:
    from tests.community.members_helpers import join_update

    settings.ALLOWED_CHAT_IDS = [-100111]
    assert processed(post_update, join_update(3001, chat_id=CHAT)) == "ignored"
    assert processed(post_update, my_update(bot_member("left"), bot_member("member"))) == (
        "processed"
    )
