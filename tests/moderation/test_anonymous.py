"""Anonymous admins and posts on behalf of chats, end to end through the pipeline and the fake
Bot API: an anonymous admin ("as the group", from GroupAnonymousBot) moderates only when every
anonymous admin of the chat holds the right; such messages, a linked channel's automatic
forwards and posts as a channel are never flooding or violating members."""

from __future__ import annotations

from typing import Any

import pytest

from moderation import flood
from moderation.models import ChatSettings
from moderation.rights import admins_key
from telegram_bot.admins import GROUP_ANONYMOUS_BOT_ID, SERVICE_ACCOUNT_ID
from telegram_bot.models import AuditEntry
from telegram_bot.state import get_store
from tests.builders import chat, make_message, next_update_id, user
from tests.fakes.telegram import FakeTelegramServer
from tests.moderation.helpers import (
    GROUP,
    MEMBER,
    answers,
    describe_group,
    member_message,
    ok_calls,
    run,
)
from tests.moderation.test_violations import classifier, rules  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db
ANON, ANON_2 = 7, 8
CHANNEL = -100888


def as_the_group(text: str, **extra: Any) -> dict[str, Any]:
    message = make_message(text, chat_id=GROUP, user_id=GROUP_ANONYMOUS_BOT_ID, **extra)
    message["from"] = user(GROUP_ANONYMOUS_BOT_ID, "Group", username="GroupAnonymousBot")
    message["from"]["is_bot"] = True
    message["sender_chat"] = chat(GROUP, "supergroup")
    return {"update_id": next_update_id(), "message": message}


def from_linked_channel(text: str) -> dict[str, Any]:
    message = make_message(text, chat_id=GROUP, user_id=SERVICE_ACCOUNT_ID)
    message["from"] = user(SERVICE_ACCOUNT_ID, "Telegram")
    message["sender_chat"] = chat(CHANNEL, "channel")
    message["is_automatic_forward"] = True
    return {"update_id": next_update_id(), "message": message}


def anonymous_admin(bot: FakeTelegramServer, user_id: int, **rights: bool) -> None:
    bot.set_chat_member(GROUP, user_id, "administrator", is_anonymous=True, **rights)


def test_an_anonymous_admin_with_the_right_bans_and_is_recorded(bot: FakeTelegramServer) -> None:
    describe_group(bot)
    anonymous_admin(bot, ANON, can_restrict_members=True)
    run(as_the_group("/ban spam", reply_to_message=member_message()))
    [ban] = ok_calls(bot, "banChatMember")
    assert ban.params["user_id"] == MEMBER
    assert answers(bot) == ["Mallory is banned for good: spam"]
    entry = AuditEntry.objects.get()
    assert (entry.actor_id, entry.actor_name, entry.action) == (
        GROUP_ANONYMOUS_BOT_ID,
        "anonymous admin",
        "ban",
    )


def test_one_anonymous_admin_without_the_right_refuses_all_of_them(
    bot: FakeTelegramServer,
) -> None:
    describe_group(bot)
    anonymous_admin(bot, ANON, can_restrict_members=True)
    anonymous_admin(bot, ANON_2, can_delete_messages=True)
    run(as_the_group("/mute", reply_to_message=member_message()))
    run(as_the_group("/del", reply_to_message=member_message()))
    assert ok_calls(bot, "restrictChatMember") == []
    assert [c.params["message_ids"] for c in ok_calls(bot, "deleteMessages")] == []
    first, second = answers(bot)
    assert first.startswith("Not every anonymous admin here may restrict members")
    assert second.startswith("Not every anonymous admin here may delete messages")
    assert not AuditEntry.objects.exists()


def test_a_stale_admin_list_is_fetched_again_for_an_anonymous_admin(
    bot: FakeTelegramServer,
) -> None:
    describe_group(bot)
    store = get_store()
    # Cached before anyone chose to remain anonymous (an older entry without the flag).
    store.set(admins_key(GROUP), [[1, "creator", True, True, ""]], 60_000)
    anonymous_admin(bot, ANON, can_restrict_members=True)
    run(as_the_group("/kick", reply_to_message=member_message()))
    assert len(ok_calls(bot, "banChatMember")) == 1


def test_posts_on_behalf_of_chats_are_not_targets(bot: FakeTelegramServer) -> None:
    describe_group(bot)
    anonymous_admin(bot, ANON, can_restrict_members=True)
    forward = from_linked_channel("news")["message"]
    run(as_the_group("/mute", reply_to_message=forward))
    run(as_the_group(f"/ban {GROUP_ANONYMOUS_BOT_ID}"))
    assert ok_calls(bot, "restrictChatMember") == [] and ok_calls(bot, "banChatMember") == []
    assert answers(bot) == [
        "That message was sent on behalf of a chat, not by a member.",
        "That is Telegram's stand-in for an anonymous admin or a channel, not a member. "
        f"({GROUP_ANONYMOUS_BOT_ID})",
    ]


def test_anonymous_admins_and_linked_channels_never_flood(
    bot: FakeTelegramServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(flood, "clock", lambda: 1_800_000_000.0)
    describe_group(bot)
    for _ in range(12):
        run(as_the_group("announcement"))
        run(from_linked_channel("post"))
    assert ok_calls(bot, "restrictChatMember") == [] and answers(bot) == []
    for _ in range(12):  # a member still is muted: the window counts only members
        run({"update_id": next_update_id(), "message": member_message()})
    [mute] = ok_calls(bot, "restrictChatMember")
    assert mute.params["user_id"] == MEMBER


def test_anonymous_admins_and_linked_channels_never_violate(bot: FakeTelegramServer) -> None:
    describe_group(bot)
    rules()
    ChatSettings.objects.create(chat_id=GROUP, violation_high="ban", violation_low="delete")
    run(as_the_group("total scam"))
    run(from_linked_channel("oh darn"))
    assert bot.calls_to("banChatMember") == [] and bot.calls_to("deleteMessage") == []
    scam = member_message()
    scam["text"] = "total scam"
    run({"update_id": next_update_id(), "message": scam})  # a member is still acted on
    [ban] = ok_calls(bot, "banChatMember")
    assert ban.params["user_id"] == MEMBER
