"""The audit log reads as sentences ("Anna muted Bob for 1h") with chats named by their titles,
in the operator's language; each feature brings its own phrases (``audit_phrases``) and chat
titles (``chat_titles``), the core names none of them."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from community.models import BotChat
from telegram_bot.audit import BOT, Actor, audit_record
from telegram_bot.audit.admin import phrases, sentence
from telegram_bot.models import AuditEntry

pytestmark = pytest.mark.django_db
CHAT = -100777


def entry(**overrides: Any) -> AuditEntry:
    values: dict[str, Any] = {
        "action": "mute",
        "actor": Actor(1000, "Anna"),
        "source": "command",
        "chat_id": CHAT,
        "target_id": 2002,
        "target_name": "@bob",
        "reason": "spam",
        "detail": "for 1h",
    }
    values.update(overrides)
    recorded = audit_record(**values)
    assert recorded is not None
    return recorded


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({}, "Anna muted @bob for 1h"),
        ({"action": "warn", "detail": "2/3"}, "Anna warned @bob (2/3)"),
        ({"action": "ban", "detail": ""}, "Anna banned @bob"),
        ({"actor": BOT, "action": "kick", "detail": ""}, "the bot removed @bob from the chat"),
        (
            {"actor": Actor(None, "admin:operator"), "action": "join_request.approve"},
            "operator approved the join request of @bob (for 1h)",
        ),
        ({"action": "ban", "outcome": "refused", "detail": "already banned"},
         "Anna banned @bob: refused, already banned"),
        ({"action": "admin.add", "target_name": "", "detail": ""}, "Anna made #2002 a bot admin"),
        ({"action": "post.delete", "target_name": "post #4", "detail": ""}, "Anna deleted post #4"),
        ({"action": "ticket.add", "target_name": "ticket #9", "detail": ""},
         "Anna added ticket #9"),
        ({"action": "something.new", "detail": ""}, "Anna: something.new @bob"),
    ],
)  # fmt: skip
def test_an_entry_reads_as_a_sentence(overrides: dict[str, Any], expected: str) -> None:
    assert sentence(entry(**overrides), phrases()) == expected


def test_the_log_names_the_chat_and_speaks_russian(admin_client: Client) -> None:
    BotChat.objects.create(chat_id=CHAT, title="Python club", chat_type="supergroup")
    entry()
    entry(action="warn", detail="1/3", chat_id=-100555)  # a chat nobody knows the title of
    page = admin_client.get("/admin/telegram_bot/auditentry/").content.decode()
    # The target links to the member's page.
    assert f'<a href="/admin/stats/member/{CHAT}/2002/" class="member-link">@bob</a>' in page
    page = re.sub(r"<[^>]+>", "", page)
    assert "Anna muted @bob for 1h" in page
    assert "Python club" in page and "-100555" in page
    russian = admin_client.get(
        "/admin/telegram_bot/auditentry/", HTTP_ACCEPT_LANGUAGE="ru"
    ).content.decode()
    russian = re.sub(r"<[^>]+>", "", russian)
    assert "Anna: мут участника @bob for 1h" in russian
