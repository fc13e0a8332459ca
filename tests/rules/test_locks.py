"""Locks through the webhook against the fake Bot API: /lock by an admin with the right
rights, the locked kind deleted with the lock's action, the allow-list of link domains,
re-deliveries acting once, edited messages judged again, approved members and admins exempt."""

from __future__ import annotations

from typing import Any

import pytest

from moderation.models import Warning
from moderation.rules.models import AllowedDomain, Approval, Lock
from telegram_bot.models import AuditEntry
from tests.builders import next_update_id
from tests.fakes.telegram import FakeTelegramServer
from tests.moderation.helpers import (
    CHAT_OWNER,
    DELETER,
    GROUP,
    MEMBER,
    MOD,
    OTHER,
    answers,
    describe_group,
    ok_calls,
)
from tests.rules.helpers import command, edit, said, send, url_entity

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def group(bot: FakeTelegramServer) -> FakeTelegramServer:
    describe_group(bot)
    return bot


def deleted(bot: FakeTelegramServer) -> list[int]:
    return [call.params["message_id"] for call in ok_calls(bot, "deleteMessage")]


def link_message(url: str = "https://spam.example/buy", **kwargs: Any) -> dict[str, Any]:
    text = f"look {url} now"
    return said(text, entities=[url_entity(text, url)], **kwargs)


def test_lock_url_deletes_a_members_link_and_records_the_rule(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    assert command(post_update, "/lock url") == "processed"
    assert answers(bot)[-1] == "Locked url: delete."
    message = link_message()
    send(post_update, message)
    assert deleted(bot) == [message["message_id"]]
    entry = AuditEntry.objects.get(action="delete")
    assert (entry.source, entry.cause, entry.target_id) == ("auto", "lock", MEMBER)
    assert "lock:url" in entry.detail
    assert AuditEntry.objects.filter(action="rules.lock", actor_id=CHAT_OWNER).exists()


def test_rose_alias_and_several_kinds_with_a_mute(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    command(post_update, "/lock link sticker mute 1h")
    assert set(Lock.objects.values_list("kind", "action", "seconds")) == {
        ("url", "mute", 3600),
        ("sticker", "mute", 3600),
    }
    sticker = said(None, sticker={"file_id": "s", "file_unique_id": "s", "type": "regular"})
    send(post_update, sticker)
    assert deleted(bot) == [sticker["message_id"]]
    [restrict] = ok_calls(bot, "restrictChatMember")
    assert restrict.params["user_id"] == MEMBER
    assert AuditEntry.objects.get(action="mute").cause == "lock"


def test_a_redelivered_update_acts_once(bot: FakeTelegramServer, post_update: Any) -> None:
    command(post_update, "/lock url warn")
    message = link_message()
    update_id = next_update_id()
    send(post_update, message, update_id=update_id)
    assert send(post_update, message, update_id=update_id) == "duplicate"
    assert deleted(bot) == [message["message_id"]]
    assert Warning.objects.filter(user_id=MEMBER).count() == 1
    assert AuditEntry.objects.filter(action="warn").count() == 1


def test_allowed_domains_and_their_subdomains_pass(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    command(post_update, "/lock url")
    command(post_update, "/allowlist https://Example.org/path")
    assert list(AllowedDomain.objects.values_list("domain", flat=True)) == ["example.org"]
    send(post_update, link_message("https://docs.example.org/a"))
    send(post_update, link_message("example.org"))
    assert deleted(bot) == []
    bad = link_message("https://example.org.evil.test/x")
    send(post_update, bad)
    assert deleted(bot) == [bad["message_id"]]


def test_an_edited_message_that_turns_forbidden_is_deleted_once(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    command(post_update, "/lock url")
    message = said("hello all")
    send(post_update, message)
    assert deleted(bot) == []
    text = "hello https://spam.example"
    assert (
        edit(post_update, message, text, entities=[url_entity(text, "https://spam.example")])
        == "processed"
    )
    assert deleted(bot) == [message["message_id"]]
    assert AuditEntry.objects.filter(action="delete", cause="lock").count() == 1


def test_admins_and_approved_members_are_exempt(bot: FakeTelegramServer, post_update: Any) -> None:
    command(post_update, "/lock url")
    send(post_update, link_message(user_id=DELETER, name="Del"))
    command(post_update, f"/approve {OTHER}")
    assert Approval.objects.filter(chat_id=GROUP, user_id=OTHER).exists()
    send(post_update, link_message(user_id=OTHER, name="Olive"))
    assert deleted(bot) == []
    command(post_update, f"/unapprove {OTHER}")
    late = link_message(user_id=OTHER, name="Olive")
    send(post_update, late)
    assert deleted(bot) == [late["message_id"]]


def test_members_cannot_lock_and_bad_arguments_get_a_short_answer(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    command(post_update, "/lock url", sender=MEMBER)
    command(post_update, "/lock url", sender=MOD)  # may restrict, not delete
    command(post_update, "/lock nonsense")
    command(post_update, "/lock url mute 5x")
    command(post_update, "/lock")
    assert answers(bot) == [
        "Only the chat's admins can do that.",
        "You need the right to delete messages for that.",
        "nonsense is not a lock: see /locktypes.",
        "'5x' is not a duration. Durations look like 30m, 2h or 7d (30 seconds to 366 days).",
        "Say what to lock, e.g. /lock url (see /locktypes).",
    ]
    assert not Lock.objects.exists()


def test_unlock_and_locks(bot: FakeTelegramServer, post_update: Any) -> None:
    command(post_update, "/lock forward ban")
    command(post_update, "/locks")
    assert answers(bot)[-1] == "Locked here:\n- forward: delete and ban"
    command(post_update, "/unlock forward")
    assert answers(bot)[-1] == "Unlocked forward."
    forwarded = said(
        "news",
        forward_origin={
            "type": "channel",
            "date": 1,
            "chat": {"id": -5, "type": "channel"},
            "message_id": 3,
        },
    )
    send(post_update, forwarded)
    assert deleted(bot) == []


def test_a_lock_says_its_message_when_it_deletes(bot: FakeTelegramServer, post_update: Any) -> None:
    command(post_update, "/lock url")
    command(post_update, "/lockmessage photo Hi")
    command(post_update, "/lockmessage nothing Hi")
    command(post_update, "/lockmessage url " + "x" * 501)
    command(post_update, "/lockmessage url No links here, {first}!", sender=MEMBER)
    assert answers(bot)[-4:] == [
        "photo is not locked here: /lock photo first.",
        "Say which lock and what it says, e.g. /lockmessage url No links here.",
        "A lock's message is at most 500 characters.",
        "Only the chat's admins can do that.",
    ]
    command(post_update, "/lockmessage url   No links here,   {first}!")
    assert answers(bot)[-1] == "The url lock now says: No links here, {first}!"
    command(post_update, "/locks")
    assert answers(bot)[-1].startswith("Locked here:\n- url: delete «No links here, {first}!»")
    first = link_message(name="Mallory")
    send(post_update, first)
    assert answers(bot)[-1] == "No links here, Mallory!"
    assert deleted(bot) == [first["message_id"]]
    command(post_update, "/lockmessage url")
    assert answers(bot)[-1] == "The url lock deletes without a word."
    count = len(answers(bot))
    send(post_update, link_message(name="Mallory"))
    assert len(answers(bot)) == count and len(deleted(bot)) == 2
    assert Lock.objects.get(kind="url").message == ""
    assert AuditEntry.objects.filter(action="rules.lock_message").count() == 2
