"""Members joining and leaving, end to end through the webhook and the fake Bot API: the
routing of chat_member and the service messages, welcome, goodbye, rules, cleaning."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.core.exceptions import ValidationError

from community.models import MemberPolicy
from telegram_bot.pipeline.router import get_router
from telegram_bot.state import KVStore
from tests.builders import make_message_update
from tests.community.helpers import succeeded
from tests.community.members_helpers import (
    GROUP,
    chat_member_update,
    join_update,
    leave_update,
    make_policy,
    processed,
    sent_to,
    service_update,
)
from tests.fakes.telegram import FakeTelegramServer

ANN = 3001


def test_member_updates_are_requested_from_telegram() -> None:
    assert {"chat_member", "my_chat_member", "message"} <= set(get_router().allowed_updates)


def test_a_join_is_welcomed_with_the_placeholders_filled_in(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    make_policy(
        welcome_enabled=True,
        welcome_text="Hi {first_name} ({mention}) in {chat_title}! Rules: {rules}",
        rules_text="Be <nice> & kind",
        welcome_buttons="Read the FAQ | https://example.org/faq",
    )
    assert processed(post_update, join_update(ANN, first_name="Ann<b>")) == "processed"
    [call] = succeeded(bot, "sendMessage")
    assert call.params["parse_mode"] == "HTML"
    assert call.params["text"] == (
        'Hi Ann&lt;b&gt; (<a href="tg://user?id=3001">Ann&lt;b&gt;</a>) in Cat lovers! '
        "Rules: Be &lt;nice&gt; &amp; kind"
    )
    assert call.params["reply_markup"] == {
        "inline_keyboard": [[{"text": "Read the FAQ", "url": "https://example.org/faq"}]]
    }


def test_a_join_seen_twice_and_redelivered_is_welcomed_once(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    make_policy(welcome_enabled=True, welcome_text="Hi {first_name}")
    now = int(time.time())
    join = join_update(ANN, date=now)
    assert processed(post_update, join) == "processed"
    # The service message of the same join, and the update delivered again after a lost
    # answer (a fresh done-marker, as when the first delivery died before marking it).
    assert processed(post_update, service_update(joined=[ANN], date=now)) == "processed"
    join_again = dict(join, update_id=join["update_id"] + 100_000)
    assert processed(post_update, join_again) == "processed"
    assert sent_to(bot) == ["Hi Ann"]


def test_service_messages_alone_welcome_and_say_goodbye(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    make_policy(
        welcome_enabled=True,
        welcome_text="Hi {first_name}",
        goodbye_enabled=True,
        goodbye_text="Bye {first_name}",
        clean_service_messages=True,
    )
    now = int(time.time())
    processed(post_update, service_update(joined=[ANN], date=now, message_id=901))
    processed(post_update, service_update(left=ANN, date=now + 5, message_id=902))
    # A re-delivered join older than the leave changes nothing.
    processed(post_update, service_update(joined=[ANN], date=now, message_id=901))
    assert sent_to(bot) == ["Hi Ann", "Bye Ann"]
    deleted = [call.params["message_id"] for call in bot.calls_to("deleteMessage")]
    assert deleted[:2] == [901, 902]


def test_a_member_who_comes_back_is_welcomed_again(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    make_policy(welcome_enabled=True, welcome_text="Hi {first_name}")
    now = int(time.time())
    processed(post_update, join_update(ANN, date=now))
    processed(post_update, leave_update(ANN, date=now + 1))
    processed(post_update, join_update(ANN, date=now + 2))
    assert sent_to(bot) == ["Hi Ann", "Hi Ann"]


def test_restricting_or_promoting_a_member_is_not_a_join(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    make_policy(welcome_enabled=True, welcome_text="Hi", goodbye_enabled=True, goodbye_text="Bye")
    processed(post_update, chat_member_update(ANN, "member", "restricted"))
    processed(post_update, chat_member_update(ANN, "member", "administrator", can_be_edited=False))
    assert sent_to(bot) == []


def test_the_previous_welcome_is_deleted(
    bot: FakeTelegramServer, post_update: Any, memory_store: KVStore
) -> None:
    make_policy(welcome_enabled=True, welcome_text="Hi {first_name}", delete_previous_welcome=True)
    processed(post_update, join_update(ANN))
    first = memory_store.get(f"members:w:{GROUP}")
    processed(post_update, join_update(ANN + 1, first_name="Bob"))
    second = memory_store.get(f"members:w:{GROUP}")
    [delete] = succeeded(bot, "deleteMessage")
    assert delete.params == {"chat_id": GROUP, "message_id": first}
    assert bot.message(GROUP, first) is None
    assert (bot.message(GROUP, second) or {})["text"] == "Hi Bob"


def test_a_chat_without_a_policy_gets_nothing(bot: FakeTelegramServer, post_update: Any) -> None:
    assert processed(post_update, join_update(ANN)) == "processed"
    assert processed(post_update, service_update(joined=[ANN])) == "processed"
    assert bot.calls == []


def test_rules_command(bot: FakeTelegramServer, post_update: Any) -> None:
    processed(post_update, make_message_update("/rules", chat_id=GROUP, user_id=ANN))
    make_policy(rules_text="1. Be kind")
    processed(post_update, make_message_update("/rules", chat_id=GROUP, user_id=ANN))
    assert sent_to(bot) == ["No rules are set for this group.", "1. Be kind"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("fields", "field", "says"),
    [
        ({"welcome_enabled": True}, "welcome_text", "Write the welcome"),
        ({"welcome_text": "Hi {name}"}, "welcome_text", "Unknown placeholder {name}"),
        ({"goodbye_text": "Bye {rules}"}, "goodbye_text", "Unknown placeholder {rules}"),
        ({"welcome_text": "x" * 4000 + "{mention}"}, "welcome_text", "4096"),
        ({"welcome_text": "{rules}{rules}", "rules_text": "r" * 2100}, "welcome_text", "4096"),
        ({"welcome_buttons": "no separator"}, "welcome_buttons", "Line 1"),
        ({"welcome_buttons": "FAQ | javascript:alert(1)"}, "welcome_buttons", "https://"),
        ({"welcome_buttons": "\n".join(["A | https://a.org"] * 9)}, "welcome_buttons", "At most"),
        ({"chat_id": 5}, "chat_id", "negative"),
        ({"captcha_seconds": 5}, "captcha_seconds", "greater than or equal to 30"),
    ],
)
def test_texts_are_checked_against_telegram_limits_when_saved(
    fields: dict[str, Any], field: str, says: str
) -> None:
    values: dict[str, Any] = {"chat_id": GROUP}
    values.update(fields)
    with pytest.raises(ValidationError) as caught:
        MemberPolicy(**values).full_clean()
    assert says in " ".join(caught.value.message_dict[field])


@pytest.mark.django_db
def test_the_longest_valid_welcome_is_accepted() -> None:
    # 4096 with the longest mention (129) in place of {mention}.
    MemberPolicy(chat_id=GROUP, welcome_text="x" * (4096 - 129) + "{mention}").full_clean()


@pytest.mark.django_db
def test_operators_configure_members_in_the_admin_site(admin_client: Any) -> None:
    url = "/admin/community/memberpolicy/add/"
    form = {
        "chat_id": str(GROUP),
        "title": "Cats",
        "welcome_enabled": "on",
        "welcome_text": "Hi {name}",
        "welcome_buttons": "FAQ https://example.org",
        "goodbye_text": "",
        "rules_text": "Be kind",
        "captcha_seconds": "2m",
        "raid_joins": "10",
        "raid_window_seconds": "1m",
        "raid_strict_minutes": "15m",
        "raid_mode": "requests",
        "spam_action": "kick",
    }
    page = admin_client.post(url, form).content.decode()
    assert "Unknown placeholder {name}" in page and "Line 1" in page
    assert not MemberPolicy.objects.exists()
    form.update(welcome_text="Hi {first_name}", welcome_buttons="FAQ | https://example.org")
    form["captcha_enabled"] = "on"
    assert admin_client.post(url, form).status_code == 302
    policy = MemberPolicy.objects.get(chat_id=GROUP)
    assert policy.captcha_enabled and policy.rules_text == "Be kind"
    assert policy.raid_mode == MemberPolicy.RaidMode.REQUESTS
    assert policy.spam_action == MemberPolicy.SpamAction.KICK
    assert "Cats" in admin_client.get("/admin/community/memberpolicy/").content.decode()
    # The chats of the bot are read only.
    assert admin_client.get("/admin/community/botchat/add/").status_code == 403


@pytest.mark.django_db
def test_ordinary_group_messages_cost_the_joins_observer_nothing(
    django_assert_num_queries: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from types import SimpleNamespace

    from community import handlers
    from telegram_bot.updates import parse_update

    def no_store() -> Any:
        raise AssertionError("the KV store was used for an ordinary message")

    monkeypatch.setattr("community.services.members.get_store", no_store)
    update = parse_update(make_message_update("hello", chat_id=GROUP, user_id=ANN))
    with django_assert_num_queries(0):
        handlers.on_service_message(SimpleNamespace(update=update))  # type: ignore[arg-type]


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
