"""A group upgraded to a supergroup (a new chat id): its settings, every app's, follow it once."""

from __future__ import annotations

import time
from typing import Any

from tests.builders import chat, next_update_id
from tests.community.members_helpers import (
    join_update,
    make_policy,
    processed,
    sent_to,
)
from tests.fakes.telegram import FAKE_TOKEN, FakeTelegramServer

ANN = 3001
BOT_ID = int(FAKE_TOKEN.split(":")[0])


OLD_GROUP, NEW_GROUP = -4001, -1004001


def test_a_group_upgraded_to_a_supergroup_keeps_its_member_policy(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    """Telegram moves a group to a new id when it becomes a supergroup (the message with
    ``migrate_to_chat_id`` in the old one, ``migrate_from_chat_id`` in the new one). Nothing
    handles it: the policy (welcome, captcha, anti-raid) stays on the dead id and the new
    supergroup has none."""
    make_policy(chat_id=OLD_GROUP, welcome_enabled=True, welcome_text="Hi {first_name}")
    now = int(time.time())
    moved = {
        "message_id": 50,
        "date": now,
        "chat": chat(OLD_GROUP, "group", "Cat lovers"),
        "from": {"id": 42, "is_bot": False, "first_name": "Owner"},
        "migrate_to_chat_id": NEW_GROUP,
    }
    arrived = {
        "message_id": 1,
        "date": now,
        "chat": chat(NEW_GROUP, "supergroup", "Cat lovers"),
        "sender_chat": chat(OLD_GROUP, "group", "Cat lovers"),
        "migrate_from_chat_id": OLD_GROUP,
    }
    post_update({"update_id": next_update_id(), "message": moved})
    post_update({"update_id": next_update_id(), "message": arrived})
    processed(post_update, join_update(ANN, chat_id=NEW_GROUP, date=now + 1))
    assert sent_to(bot, NEW_GROUP) == ["Hi Ann"], "the supergroup has no policy after the upgrade"


def test_an_upgrade_moves_every_apps_chat_settings_once_and_keeps_the_supergroups_own(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    from community.models import MemberPolicy
    from moderation.models import ChatSettings
    from telegram_bot.models import AuditEntry, ChatPreference

    make_policy(chat_id=OLD_GROUP, welcome_enabled=True, welcome_text="Hi")
    ChatSettings.objects.create(chat_id=OLD_GROUP, warn_limit=7)
    ChatPreference.objects.create(chat_id=OLD_GROUP, time_zone="Europe/Oslo")
    ChatPreference.objects.create(chat_id=NEW_GROUP, time_zone="Asia/Tokyo")  # its own
    arrived = {
        "message_id": 1,
        "date": int(time.time()),
        "chat": chat(NEW_GROUP, "supergroup", "Cat lovers"),
        "migrate_from_chat_id": OLD_GROUP,
    }
    update = {"update_id": next_update_id(), "message": arrived}
    assert post_update(update)["X-Update-Outcome"] == "processed"
    assert MemberPolicy.objects.get(chat_id=NEW_GROUP).welcome_text == "Hi"
    assert ChatSettings.objects.get(chat_id=NEW_GROUP).warn_limit == 7
    assert ChatPreference.objects.get(chat_id=NEW_GROUP).time_zone == "Asia/Tokyo"
    assert not MemberPolicy.objects.filter(chat_id=OLD_GROUP).exists()
    [entry] = AuditEntry.objects.filter(action="chat.migrate")
    assert entry.chat_id == NEW_GROUP and str(OLD_GROUP) in entry.detail
    update["update_id"] = next_update_id()  # the old group's message: nothing left to move
    update["message"] = {**arrived, "chat": chat(OLD_GROUP, "group", "Cat lovers")}
    del update["message"]["migrate_from_chat_id"]
    update["message"]["migrate_to_chat_id"] = NEW_GROUP
    assert post_update(update)["X-Update-Outcome"] == "processed"
    assert AuditEntry.objects.filter(action="chat.migrate").count() == 1
