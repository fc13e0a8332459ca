"""/connect: an admin sets a group up from their private chat with the bot; the commands they
send there apply to the group, with their rights there checked at each command, until
/disconnect; nobody else can connect, and a demoted admin's next command is refused."""

from __future__ import annotations

from typing import Any

import pytest

from moderation.models import Connection, Warning
from moderation.rights import forget_chat_admins
from moderation.rules.models import Lock
from telegram_bot.state import get_store
from tests.builders import make_message, next_update_id
from tests.fakes.telegram import FakeTelegramServer
from tests.moderation.helpers import (
    DELETER,
    GROUP,
    MEMBER,
    MOD,
    answers,
    describe_group,
    ok_calls,
)
from tests.rules.helpers import command, outcome

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def group(bot: FakeTelegramServer) -> FakeTelegramServer:
    describe_group(bot)
    return bot


def private(post_update: Any, user_id: int, text: str) -> str:
    message = make_message(text, chat_id=user_id, user_id=user_id, chat_type="private")
    return outcome(post_update, {"update_id": next_update_id(), "message": message})


def said_privately(bot: FakeTelegramServer, user_id: int) -> list[str]:
    return [
        c.params["text"] for c in ok_calls(bot, "sendMessage") if c.params["chat_id"] == user_id
    ]


def test_an_admin_connects_in_the_group_and_sets_it_up_in_private(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    command(post_update, "/connect", sender=DELETER)
    assert answers(bot)[-1].startswith("Connected: the commands you send me in private")
    private(post_update, DELETER, "/lock url")
    private(post_update, DELETER, "/addblocklist casino*")
    assert said_privately(bot, DELETER)[0] == "Locked url: delete."
    assert list(Lock.objects.values_list("chat_id", "kind")) == [(GROUP, "url")]
    assert len(answers(bot)) == 1  # nothing more in the group
    private(post_update, DELETER, "/ban 5005")  # a right this admin lacks there
    assert said_privately(bot, DELETER)[-1] == "You need the right to restrict members for that."
    assert ok_calls(bot, "banChatMember") == []


def test_moderation_by_id_from_private_and_the_help_lists_it(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    private(post_update, MOD, f"/connect {GROUP}")
    assert said_privately(bot, MOD)[-1].startswith("Connected:")
    private(post_update, MOD, f"/warn {MEMBER} spam")
    [warning] = Warning.objects.all()
    assert (warning.chat_id, warning.user_id, warning.moderator_id) == (GROUP, MEMBER, MOD)
    private(post_update, MOD, "/connect")
    assert said_privately(bot, MOD)[-1] == f"Connected to {GROUP}: /disconnect ends it."


def test_members_cannot_connect_and_nothing_applies_without_a_connection(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    command(post_update, "/connect", sender=MEMBER)
    assert answers(bot)[-1] == "Only the chat's admins can do that."
    private(post_update, MEMBER, f"/connect {GROUP}")
    private(post_update, MEMBER, "/lock url")
    private(post_update, MEMBER, "/connect abc")
    private(post_update, MEMBER, "/connect 12345")
    assert said_privately(bot, MEMBER) == [
        "Only the chat's admins can do that.",
        "Send that in the group, or connect this chat to it first: /connect in the group.",
        "abc is not a group id (they start with -).",
        "12345 is not a group id (they start with -).",
    ]
    assert not Connection.objects.exists() and not Lock.objects.exists()


def test_a_group_the_bot_is_not_in_is_refused(bot: FakeTelegramServer, post_update: Any) -> None:
    bot.fail_next("getChatAdministrators", status=400, description="Bad Request: chat not found")
    private(post_update, MOD, "/connect -100999")
    assert said_privately(bot, MOD) == ["I can't see that group: add me to it first."]
    assert not Connection.objects.exists()


def test_a_demoted_admin_is_refused_and_disconnect_ends_it(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    command(post_update, "/connect", sender=DELETER)
    bot.set_chat_member(GROUP, DELETER, "member", first_name="Del")
    forget_chat_admins(get_store(), GROUP)  # as the chat_member update of the demotion does
    private(post_update, DELETER, "/lock url")
    assert said_privately(bot, DELETER)[-1] == "Only the chat's admins can do that."
    private(post_update, DELETER, "/disconnect")
    private(post_update, DELETER, "/disconnect")
    assert said_privately(bot, DELETER)[-2:] == [
        "Disconnected.",
        "You were not connected to a group.",
    ]
    assert not Lock.objects.exists()
