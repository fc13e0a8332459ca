"""Subscribers through the webhook: /start subscribes, /stop opts out, blocking the bot
unsubscribes, member updates keep the chat segments; the segment selects by all three."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from broadcasts.models import Broadcast, ChatMembership, Subscriber, SubscriberStatus
from broadcasts.selectors import segment
from telegram_bot.models import BlockedChat
from tests.builders import make_message_update, next_update_id, user
from tests.community.members_helpers import chat_member_update
from tests.fakes.telegram import FakeTelegramServer

pytestmark = pytest.mark.django_db


def start_update(user_id: int, language: str = "en") -> dict[str, Any]:
    update = make_message_update("/start", chat_id=user_id, user_id=user_id)
    update["message"]["from"]["language_code"] = language
    return update


def blocked_update(user_id: int, status: str = "kicked") -> dict[str, Any]:
    old = "member" if status == "kicked" else "kicked"
    bot_user = {"id": 123456789, "is_bot": True, "first_name": "Bot"}
    return {
        "update_id": next_update_id(),
        "my_chat_member": {
            "chat": {"id": user_id, "type": "private", "first_name": "Test"},
            "from": user(user_id),
            "date": int(time.time()),
            "old_chat_member": {"status": old, "user": bot_user},
            "new_chat_member": {"status": status, "user": bot_user},
        },
    }


def test_start_in_private_subscribes_and_stop_opts_out(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    assert post_update(start_update(501, "ru")).status_code == 200
    subscriber = Subscriber.objects.get(user_id=501)
    assert (subscriber.status, subscriber.language) == (SubscriberStatus.ACTIVE, "ru")
    # The core still answers /start.
    assert any(c.params["chat_id"] == 501 for c in bot.calls_to("sendMessage"))

    post_update(make_message_update("/stop", chat_id=501, user_id=501))
    subscriber.refresh_from_db()
    assert subscriber.status == SubscriberStatus.STOPPED
    answer = bot.calls_to("sendMessage")[-1]
    assert answer.params["chat_id"] == 501 and "/start" in answer.params["text"]

    joined = subscriber.joined_at
    post_update(start_update(501, "ru"))
    subscriber.refresh_from_db()
    assert subscriber.status == SubscriberStatus.ACTIVE
    assert subscriber.joined_at == joined  # "joined since" is the first /start


def test_a_redelivered_start_subscribes_once(bot: FakeTelegramServer, post_update: Any) -> None:
    update = start_update(502)
    post_update(update)
    post_update(update)
    assert Subscriber.objects.filter(user_id=502).count() == 1


def test_start_in_a_group_subscribes_nobody(bot: FakeTelegramServer, post_update: Any) -> None:
    post_update(make_message_update("/start", chat_id=-100777, user_id=503))
    assert not Subscriber.objects.filter(user_id=503).exists()


def test_blocking_the_bot_unsubscribes_and_start_resubscribes(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    post_update(start_update(504))
    assert post_update(blocked_update(504)).status_code == 200
    assert Subscriber.objects.get(user_id=504).status == SubscriberStatus.BLOCKED
    post_update(blocked_update(504, status="member"))  # unblocked: still waits for /start
    assert Subscriber.objects.get(user_id=504).status == SubscriberStatus.BLOCKED
    post_update(start_update(504))
    assert Subscriber.objects.get(user_id=504).status == SubscriberStatus.ACTIVE


def test_member_updates_keep_the_chat_segment(bot: FakeTelegramServer, post_update: Any) -> None:
    chat = -1001234
    post_update(chat_member_update(505, "left", "member", chat_id=chat))
    assert ChatMembership.objects.get(chat_id=chat, user_id=505).is_member
    post_update(chat_member_update(505, "member", "left", chat_id=chat))
    assert not ChatMembership.objects.get(chat_id=chat, user_id=505).is_member


def test_a_segment_selects_by_language_chat_and_joined_since(db: None) -> None:
    now = timezone.now()
    rows = [
        Subscriber(user_id=1, language="en", joined_at=now - timedelta(days=10)),
        Subscriber(user_id=2, language="ru", joined_at=now - timedelta(days=1)),
        Subscriber(user_id=3, language="ru", joined_at=now - timedelta(days=20)),
        Subscriber(user_id=4, language="ru", status=SubscriberStatus.STOPPED),
        Subscriber(user_id=5, language="ru", status=SubscriberStatus.BLOCKED),
    ]
    Subscriber.objects.bulk_create(rows)
    Subscriber.objects.create(user_id=6, language="en", joined_at=now)
    BlockedChat.objects.create(chat_id=6, reason="Forbidden: bot was blocked by the user")
    ChatMembership.objects.create(chat_id=-1009, user_id=2)
    ChatMembership.objects.create(chat_id=-1009, user_id=3, is_member=False)

    def ids(**fields: Any) -> set[int]:
        return set(segment(Broadcast(**fields)).values_list("user_id", flat=True))

    assert ids() == {1, 2, 3}
    assert ids(segment_language="ru") == {2, 3}
    assert ids(segment_chat_id=-1009) == {2}
    assert ids(segment_joined_since=now - timedelta(days=15)) == {1, 2}
    assert ids(segment_language="en", segment_chat_id=-1009) == set()
