"""Acting on violations: each severity maps to the chat's action; the classification comes
from the statistics app's rules through the core service (telegram_bot.violations), which the
statistics app is to register into (see the report); here the test registers the same adapter
over the statistics rules and matcher."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import pytest

from moderation.models import ChatSettings
from stats.config import counting_config, counting_config_clear
from stats.counting import _violations
from stats.keys import ACTIVITY
from stats.models import ViolationKind, ViolationRule
from telegram_bot import violations
from telegram_bot.models import AuditEntry
from telegram_bot.state import KVStore, get_store
from telegram_bot.updates import Message
from tests.builders import next_update_id
from tests.fakes.telegram import FakeTelegramServer
from tests.moderation.helpers import (
    DELETER,
    GROUP,
    MEMBER,
    answers,
    describe_group,
    member_message,
    ok_calls,
    run,
)

pytestmark = pytest.mark.django_db
registered_at_start = dict(violations._classifiers)


def stats_rules(message: Message, store: KVStore) -> Mapping[str, int]:
    """The statistics app's banned-word rules, read through its own config and matcher."""
    return _violations(message.text_or_caption, message, counting_config(), lambda: False)


@pytest.fixture(autouse=True)
def classifier() -> Iterator[None]:
    counting_config_clear()
    registered = dict(violations._classifiers)
    violations.register_classifier("stats", stats_rules)
    yield
    violations._classifiers.clear()
    violations._classifiers.update(registered)  # the app's own registration stays
    counting_config_clear()


def test_the_stats_app_registers_its_rules_at_start() -> None:
    from stats.services import message_violations

    assert registered_at_start["stats"] is message_violations


def rules() -> None:
    for severity, word in (("low", "darn"), ("medium", "casino*"), ("high", "scam")):
        ViolationRule.objects.create(
            name=word, kind=ViolationKind.BANNED_WORDS, words=word, severity=severity
        )
    counting_config_clear()


def say(text: str, user_id: int = MEMBER, name: str = "Mallory") -> dict:
    message = member_message(user_id, name)
    message["text"] = text
    run({"update_id": next_update_id(), "message": message})
    return message


def test_the_defaults_do_nothing(bot: FakeTelegramServer) -> None:
    describe_group(bot)
    rules()
    say("total scam casinos")
    assert bot.calls_to("deleteMessage") == [] and bot.calls_to("banChatMember") == []


def test_each_severity_takes_its_action(bot: FakeTelegramServer) -> None:
    describe_group(bot)
    rules()
    ChatSettings.objects.create(
        chat_id=GROUP, violation_low="delete", violation_medium="warn", violation_high="ban"
    )
    darn = say("oh d.a.r.n")
    say("try casinos now")
    say("hello everyone")
    say("this is a scam and casino")  # high wins over medium
    [deleted] = ok_calls(bot, "deleteMessage")
    assert deleted.params["message_id"] == darn["message_id"]
    [ban] = ok_calls(bot, "banChatMember")
    assert ban.params["user_id"] == MEMBER
    assert answers(bot) == [
        "Mallory is warned (1/3): medium violation",
        "Mallory is banned for 1h: high violation",
    ]
    assert list(AuditEntry.objects.order_by("id").values_list("action", "source")) == [
        ("delete", "auto"),
        ("warn", "auto"),
        ("ban", "auto"),
    ]


def test_admins_are_exempt_and_statistics_still_count(bot: FakeTelegramServer) -> None:
    describe_group(bot)
    rules()
    ChatSettings.objects.create(chat_id=GROUP, violation_high="mute")
    say("scam", DELETER, "Del")
    assert bot.calls_to("restrictChatMember") == []
    say("scam")
    assert len(ok_calls(bot, "restrictChatMember")) == 1
    store = get_store()
    assert sum(store.get(k) for k in store.scan_all(ACTIVITY) if str(GROUP) in k) == 2


def test_without_a_classifier_nothing_is_a_violation(bot: FakeTelegramServer) -> None:
    violations.unregister_classifier("stats")
    describe_group(bot)
    rules()
    ChatSettings.objects.create(chat_id=GROUP, violation_high="ban")
    say("scam")
    assert bot.calls_to("banChatMember") == []


def test_classify_sums_known_severities_of_every_classifier(memory_store: KVStore) -> None:
    violations.register_classifier("a", lambda m, s: {"low": 1, "high": 0, "bogus": 5})
    violations.register_classifier("b", lambda m, s: {"low": 2, "medium": 1})
    try:
        message = Message.model_validate(member_message())
        counts = violations.classify(message, memory_store)
    finally:
        violations.unregister_classifier("a")
        violations.unregister_classifier("b")
    assert counts["low"] == 3 and counts["medium"] == 1 and "bogus" not in counts
    assert "high" not in counts
    assert violations.worst(counts) == "medium" and violations.worst({}) is None


def test_a_forged_supergroup_with_a_positive_id_is_not_acted_on(bot: FakeTelegramServer) -> None:
    """Violations in a body calling chat 1000 a supergroup (groups have negative ids): nobody
    is asked about that chat's admins, nothing is deleted, nobody is banned."""
    describe_group(bot)
    rules()
    ChatSettings.objects.create(chat_id=1000, violation_low="delete", violation_high="ban")
    for text in ("oh darn", "a scam"):
        message = member_message()
        message["chat"] = {"id": 1000, "type": "supergroup", "title": "forged"}
        message["text"] = text
        run({"update_id": next_update_id(), "message": message})
    assert [c for c in bot.calls if c.failed] == []
    assert bot.calls_to("getChatAdministrators") == [] and bot.calls_to("deleteMessage") == []
    assert bot.calls_to("banChatMember") == [] and AuditEntry.objects.count() == 0


def test_a_message_acted_on_is_classified_once(bot: FakeTelegramServer) -> None:
    """The observer's declaration classifies the message; the handler acts on that finding
    instead of classifying it again."""
    seen: list[int] = []

    def probe(message: Message, store: KVStore) -> Mapping[str, int]:
        seen.append(message.message_id)
        return {}

    violations.register_classifier("probe", probe)
    try:
        describe_group(bot)
        rules()
        ChatSettings.objects.create(chat_id=GROUP, violation_high="mute")
        message = say("scam")
    finally:
        violations.unregister_classifier("probe")
    assert len(ok_calls(bot, "restrictChatMember")) == 1
    assert seen == [message["message_id"]]
