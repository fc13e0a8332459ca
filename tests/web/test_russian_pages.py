"""Every operator page rendered in Russian reads in Russian: the page's visible text (tags,
scripts, styles and attribute values left out) holds no English phrase. A phrase found is
named with the catalogue's msgid it matches (``locale/ru/LC_MESSAGES/django.po``), or as
missing from the catalogue (a text that never went through gettext). The seeded data are
Russian, so that any English left is the console's own."""

from __future__ import annotations

import re
from datetime import timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from community.models import BotChat, MemberMovement
from content.models import Post
from moderation.models import ChatSettings, Warning, WarnState
from stats.models import ChatUserProfile, DailyUserStat, StatsChat
from telegram_bot.models import AuditEntry

pytestmark = pytest.mark.django_db
CATALOGUE = Path(__file__).resolve().parents[2] / "locale" / "ru" / "LC_MESSAGES" / "django.po"
CHAT, USER = -1001111111111, 501
# An English phrase: two or more Latin words in a row (names, ids and zones are one word).
PHRASE = re.compile(r"[A-Za-z][a-z]{1,}(?:[ ,:'\u2019-]+[A-Za-z][a-z]+)+")
# What reads the same in Russian: product names and terms Russian uses as they are ("Telegram
# id", the link schemes).
SAME_IN_RUSSIAN = {"Telegram id", "http, https"}


class TextOf(HTMLParser):
    """The text a reader sees: no tags, attributes, scripts, styles or hidden templates."""

    SKIPPED = {"script", "style", "template", "noscript", "svg"}

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []
        self.skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.SKIPPED:
            self.skipping += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in self.SKIPPED and self.skipping:
            self.skipping -= 1

    def handle_data(self, data: str) -> None:
        if not self.skipping and data.strip():
            self.texts.append(" ".join(data.split()))


def english_phrases(html: str) -> list[str]:
    parser = TextOf()
    parser.feed(html)
    found = []
    for text in parser.texts:
        for phrase in PHRASE.findall(text):
            if phrase not in SAME_IN_RUSSIAN:
                found.append(phrase)
    return found


def catalogue_msgids() -> set[str]:
    text = CATALOGUE.read_text(encoding="utf-8")
    msgids = set()
    for block in text.split("\n\n"):
        match = re.search(r'^msgid ((?:".*"\n?)+)', block, re.M)
        if match:
            msgids.add("".join(re.findall(r'"((?:[^"\\]|\\.)*)"', match.group(1))))
    return msgids


@pytest.fixture
def seeded() -> None:
    now = timezone.now()
    BotChat.objects.create(
        chat_id=CHAT, title="Кошатники", chat_type="supergroup", status="member", is_member=True
    )
    StatsChat.objects.create(chat_id=CHAT, title="Кошатники")
    ChatUserProfile.objects.create(chat_id=CHAT, user_id=USER, display_name="Анна")
    DailyUserStat.objects.create(chat_id=CHAT, day=now.date(), user_id=USER, message_count=3)
    MemberMovement.objects.create(chat_id=CHAT, user_id=USER, kind="join", at=now, day=now.date())
    WarnState.objects.create(chat_id=CHAT, user_id=USER, name="Анна")
    Warning.objects.create(
        chat_id=CHAT, user_id=USER, reason="флуд", expires_at=now + timedelta(days=30)
    )
    ChatSettings.objects.create(chat_id=CHAT, title="Кошатники", warn_limit=5)
    Post.objects.create(channel="@kanal", text="Привет", status="draft")
    AuditEntry.objects.create(
        chat_id=CHAT, action="warn", actor_name="Ольга", target_id=USER, target_name="Анна"
    )


# The operator's pages (not System's): what an operator opens every day.
PAGES = [
    "/admin/",
    "/admin/stats/",
    "/admin/stats/today/",
    f"/admin/stats/member/{CHAT}/{USER}/",
    "/admin/moderation/settings/",
    f"/admin/moderation/settings/{CHAT}/",
    "/admin/moderation/warning/",
    "/admin/moderation/chatsettings/",
    "/admin/community/membermovement/",
    "/admin/community/join-requests/",
    "/admin/content/post/",
    "/admin/content/post/add/",
    "/admin/telegram_bot/auditentry/",
    "/admin/support/ticket/",
    "/admin/privacy/export/",
]


@pytest.mark.parametrize("url", PAGES)
def test_the_operators_page_reads_in_russian(
    admin_client: Client, seeded: None, url: str, settings: Any
) -> None:
    settings.LANGUAGE_CODE = "ru"
    response = admin_client.get(url, HTTP_ACCEPT_LANGUAGE="ru")
    assert response.status_code == 200, url
    assert response["Content-Language"] == "ru"
    msgids = catalogue_msgids()
    found = english_phrases(response.content.decode())
    named = sorted(
        {
            f"{phrase!r}: " + ("untranslated msgid" if phrase in msgids else "not in the catalogue")
            for phrase in found
        }
    )
    assert not named, f"{url} shows English in Russian:\n" + "\n".join(named)


def test_the_check_finds_english_and_names_the_msgid() -> None:
    page = '<p title="Not this">Ещё <b>Data quality</b></p><script>var x = "not this";</script>'
    assert english_phrases(page) == ["Data quality"]
    assert "Data quality" not in catalogue_msgids()  # renamed: "Details for engineers"
    assert "Details for engineers" in catalogue_msgids()
