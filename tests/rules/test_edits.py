"""Edited messages go through the same rules as new ones (#40 item 7): a chat's locks and the
violations of the global classifier, once per edit (a re-delivered edit acts once), and the
statistics do not count an edit as a message."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from moderation.models import ChatSettings, Warning
from stats.models import DailyUserStat
from telegram_bot import violations
from telegram_bot.models import AuditEntry
from telegram_bot.state import KVStore
from telegram_bot.updates import Message
from tests.builders import next_update_id
from tests.fakes.telegram import FakeTelegramServer
from tests.moderation.helpers import GROUP, MEMBER, describe_group, ok_calls
from tests.rules.helpers import command, outcome, said, send

pytestmark = pytest.mark.django_db


def rude(message: Message, store: KVStore) -> Mapping[str, int]:
    return {"high": 1} if "rudeword" in message.text_or_caption else {}


@pytest.fixture(autouse=True)
def group(bot: FakeTelegramServer) -> Iterator[FakeTelegramServer]:
    describe_group(bot)
    registered = dict(violations._classifiers)
    violations._classifiers.clear()
    violations.register_classifier("test", rude)
    yield bot
    violations._classifiers.clear()
    violations._classifiers.update(registered)


def edited(message: dict[str, Any], text: str, update_id: int | None = None) -> dict[str, Any]:
    return {
        "update_id": next_update_id() if update_id is None else update_id,
        "edited_message": {**message, "text": text, "edit_date": message["date"] + 5},
    }


def test_an_edit_into_a_violation_is_acted_on_once(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    ChatSettings.objects.create(chat_id=GROUP, violation_high="warn")
    message = said("hello everyone")
    send(post_update, message)
    assert Warning.objects.count() == 0
    update = edited(message, "hello rudeword")
    assert outcome(post_update, update) == "processed"
    assert outcome(post_update, update) == "duplicate"
    [warning] = Warning.objects.all()
    assert warning.user_id == MEMBER
    assert AuditEntry.objects.filter(action="warn", cause="violation").count() == 1


def test_each_edit_is_judged_on_its_own(bot: FakeTelegramServer, post_update: Any) -> None:
    ChatSettings.objects.create(chat_id=GROUP, violation_high="warn")
    message = said("hello")
    send(post_update, message)
    outcome(post_update, edited(message, "rudeword once"))
    outcome(post_update, edited(message, "rudeword twice"))
    assert Warning.objects.count() == 2


def test_a_clean_edit_does_nothing_and_edits_are_not_counted(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    command(post_update, "/lock url")
    message = said("hello there friends")
    send(post_update, message)
    counted = DailyUserStat.objects.get(chat_id=GROUP, user_id=MEMBER).message_count
    assert outcome(post_update, edited(message, "hello there, friends")) == "processed"
    assert outcome(post_update, edited(message, "rudeword, but no action is set")) == "processed"
    assert ok_calls(bot, "deleteMessage") == []
    assert DailyUserStat.objects.get(chat_id=GROUP, user_id=MEMBER).message_count == counted == 1
