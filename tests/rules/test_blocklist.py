"""Blocklists per chat (#40 item 2) through the webhook: words, quoted phrases and ``*``
wildcards, matched case- and diacritic-insensitively, each with its action; bad arguments get
a short answer; a pathological pattern takes bounded time."""

from __future__ import annotations

import time
from typing import Any

import pytest

from moderation.models import Warning
from moderation.rules.blocklist import Blocklist, PatternError, normalise
from moderation.rules.models import BlocklistEntry
from telegram_bot.models import AuditEntry
from tests.fakes.telegram import FakeTelegramServer
from tests.moderation.helpers import GROUP, MEMBER, OTHER, answers, describe_group, ok_calls
from tests.rules.helpers import command, edit, said, send

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def group(bot: FakeTelegramServer) -> FakeTelegramServer:
    describe_group(bot)
    return bot


def deleted(bot: FakeTelegramServer) -> list[int]:
    return [call.params["message_id"] for call in ok_calls(bot, "deleteMessage")]


def test_a_word_is_matched_whatever_its_case_and_accents(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    command(post_update, "/addblocklist Spam")
    assert answers(bot)[-1] == "Blocked spam: delete."
    clean = said("spammer is not the word")
    send(post_update, clean)
    hits = [
        said("buy SPAM now"),
        said("Spåm!"),
        said("\uff33\uff30\uff21\uff2d"),
    ]  # full-width last
    for message in hits:
        send(post_update, message)
    assert deleted(bot) == [message["message_id"] for message in hits]
    entry = AuditEntry.objects.filter(action="delete").first()
    assert entry is not None and entry.cause == "blocklist" and "blocklist:spam" in entry.detail
    assert entry.reason == "blocked word: spam"


def test_a_quoted_phrase_with_its_action(bot: FakeTelegramServer, post_update: Any) -> None:
    command(post_update, '/addblocklist "free money" warn')
    assert list(BlocklistEntry.objects.values_list("pattern", "action")) == [("free money", "warn")]
    send(post_update, said("money is not free"))
    hit = said("Get FREE,   money!")
    send(post_update, hit)
    assert deleted(bot) == [hit["message_id"]]
    assert Warning.objects.get().user_id == MEMBER
    assert answers(bot)[-1] == "Mallory is warned (1/3): blocked word: free money"


def test_wildcards_stay_inside_a_word(bot: FakeTelegramServer, post_update: Any) -> None:
    command(post_update, "/addblocklist casino* mute 1h")
    command(post_update, "/addblocklist *coin*")
    send(post_update, said("the casino is open"))
    send(post_update, said("bitcoins here"))
    send(post_update, said("a cas ino and co in"))
    assert len(deleted(bot)) == 2
    [mute] = ok_calls(bot, "restrictChatMember")
    assert mute.params["user_id"] == MEMBER


def test_cyrillic_and_yo(bot: FakeTelegramServer, post_update: Any) -> None:
    command(post_update, "/addblocklist ёлка")
    hit = said("Купи ЕЛКУ? нет, купи Елка")
    send(post_update, hit)
    assert deleted(bot) == [hit["message_id"]]


def test_an_edit_into_a_blocked_word_and_an_approved_member(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    command(post_update, "/addblocklist scam")
    command(post_update, f"/approve {OTHER}")
    trusted = said("a scam warning", user_id=OTHER, name="Olive")
    send(post_update, trusted)
    message = said("hello")
    send(post_update, message)
    edit(post_update, message, "hello scam")
    assert deleted(bot) == [message["message_id"]]


def test_list_remove_and_bad_arguments(bot: FakeTelegramServer, post_update: Any) -> None:
    command(post_update, "/addblocklist spam ban 1d")
    command(post_update, "/blocklist")
    assert answers(bot)[-1] == "Blocklist (1):\n- spam: delete and ban (1440m)"
    command(post_update, '/addblocklist "unclosed phrase')
    command(post_update, "/addblocklist *")
    command(post_update, "/addblocklist spam explode")
    command(post_update, "/addblocklist", sender=MEMBER)
    assert answers(bot)[-4:] == [
        "The phrase has no closing quote.",
        "*: A word of * alone would match every word.",
        "explode is not an action: delete, warn, mute or ban (with a duration).",
        "Only the chat's admins can do that.",
    ]
    command(post_update, "/rmblocklist SPAM")
    assert answers(bot)[-1] == "spam is no longer blocked."
    assert not BlocklistEntry.objects.exists()
    send(post_update, said("spam"))
    assert deleted(bot) == []


def test_a_pathological_pattern_takes_bounded_time() -> None:
    rows = [(normalise("a*a*a*a*a*a*a*a*b"), "delete", None)]
    rows += [(normalise(f"*x{i}*"), "delete", None) for i in range(200)]
    blocklist = Blocklist.compile(rows)
    text = " ".join(["a" * 4000, "a" * 50] * 2)
    started = time.perf_counter()
    assert blocklist.first_match(text) is None
    assert time.perf_counter() - started < 0.5
    assert blocklist.first_match("xa aab ab") is None
    assert blocklist.first_match("aaaaaaaab") is not None


@pytest.mark.parametrize(
    "pattern",
    ["", "a" * 101, "one two three four five six seven eight nine ten eleven", "no-dash", "**"],
)
def test_patterns_that_cannot_be_used(pattern: str) -> None:
    with pytest.raises(PatternError):
        normalise(pattern)


def test_the_console_stores_the_matched_form_and_audits_it(
    bot: FakeTelegramServer, post_update: Any, admin_client: Any
) -> None:
    response = admin_client.post(
        "/admin/rules/blocklistentry/add/",
        {"chat_id": str(GROUP), "pattern": "  Free   MONEY ", "action": "delete", "seconds": ""},
    )
    assert response.status_code == 302, response.content[:2000]
    assert BlocklistEntry.objects.get().pattern == "free money"
    assert AuditEntry.objects.filter(source="admin").exists()
    hit = said("free money")
    send(post_update, hit)
    assert deleted(bot) == [hit["message_id"]]
    bad = admin_client.post(
        "/admin/rules/blocklistentry/add/",
        {"chat_id": str(GROUP), "pattern": "***", "action": "delete", "seconds": ""},
    )
    assert bad.status_code == 200 and BlocklistEntry.objects.count() == 1
