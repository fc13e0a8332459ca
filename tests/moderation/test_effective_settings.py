"""A chat's moderation settings in effect before anything is saved (moderation.settings_page):
a chat without a row shows the defaults in words, marked as defaults; a chat with a row shows
which values differ from the defaults; the list of chats says where each chat's settings come
from; the page links to the form, prefilled with the chat."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.utils import translation

from community.models import BotChat
from moderation.models import ChatSettings
from telegram_bot.durations import spoken

pytestmark = pytest.mark.django_db
CATS, DOGS = -1001111111111, -1002222222222


@pytest.fixture
def chats() -> None:
    for chat_id, title in ((CATS, "Cat lovers"), (DOGS, "Dog people")):
        BotChat.objects.create(
            chat_id=chat_id, title=title, chat_type="supergroup", status="member", is_member=True
        )


def row(page: str, name: str) -> str:
    found = re.search(rf'<tr class="setting[^"]*" id="setting-{name}">(.*?)</tr>', page, re.S)
    assert found, name
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", found.group(0))).strip()


def test_a_chat_without_settings_shows_the_defaults_in_words(
    admin_client: Client, chats: None
) -> None:
    response = admin_client.get(f"/admin/moderation/settings/{CATS}/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "no settings of its own" in page
    assert row(page, "warn_action_seconds") == "Duration of the action at the limit 1 day default"
    assert row(page, "warn_expiry_days") == "Warnings expire after 30 days default"
    assert row(page, "flood_messages") == "Flooding is more than 8 messages default"
    assert row(page, "flood_action_seconds") == "Anti-flood action duration 10 minutes default"
    assert row(page, "log_chat_id") == "Log channel none default"
    # What the page says, not its markup (the skin's colour classes hold numbers).
    shown = re.sub(r"<[^>]+>", " ", re.sub(r"<(style|script)\b.*?</\1>", "", page, flags=re.S))
    assert "86400" not in shown and "600" not in shown
    assert not ChatSettings.objects.exists()  # looking saves nothing
    edit = re.search(r'id="settings-edit" href="([^"]+)"', page)
    assert edit and f"chat_id={CATS}" in edit.group(1) and "title=Cat+lovers" in edit.group(1)
    form = admin_client.get(edit.group(1).replace("&amp;", "&")).content.decode()
    assert re.search(rf'<option value="{CATS}" selected>Cat lovers</option>', form)


def test_a_chat_with_settings_marks_what_differs_from_the_defaults(
    admin_client: Client, chats: None
) -> None:
    saved = ChatSettings.objects.create(
        chat_id=CATS, warn_limit=5, flood_action_seconds=5400, log_chat_id=DOGS
    )
    page = admin_client.get(f"/admin/moderation/settings/{CATS}/").content.decode()
    assert "has its own settings" in page
    assert row(page, "warn_limit") == (
        "Warning limit 5 warnings set for this chat (default: 3 warnings)"
    )
    assert row(page, "flood_action_seconds") == (
        "Anti-flood action duration 1 hour 30 minutes set for this chat (default: 10 minutes)"
    )
    assert row(page, "log_chat_id") == "Log channel Dog people set for this chat (default: none)"
    assert row(page, "warn_action") == "Action at the limit mute default"
    assert f"/admin/moderation/chatsettings/{saved.pk}/change/" in page


def test_the_chats_list_says_where_each_chats_settings_come_from(
    admin_client: Client, chats: None
) -> None:
    ChatSettings.objects.create(chat_id=DOGS)
    page = admin_client.get("/admin/moderation/settings/").content.decode()
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))
    assert "Cat lovers -1001111111111 the defaults" in text
    assert "Dog people -1002222222222 its own" in text
    assert f'href="/admin/moderation/settings/{CATS}/"' in page


def test_the_page_speaks_russian_with_plural_forms(admin_client: Client, chats: None) -> None:
    ChatSettings.objects.create(chat_id=CATS, warn_limit=2, warn_expiry_days=21)
    page = admin_client.get(
        f"/admin/moderation/settings/{CATS}/", HTTP_ACCEPT_LANGUAGE="ru"
    ).content.decode()
    assert "2 предупреждения" in row(page, "warn_limit")
    assert "21 день" in row(page, "warn_expiry_days")
    with translation.override("ru"):
        assert spoken(5 * 86400) == "5 дней"
        assert spoken(3600 + 60) == "1 час 1 минута"


def test_the_page_needs_the_view_permission(client: Client, chats: None) -> None:
    user = User.objects.create_user("viewer", password="pw", is_staff=True)
    client.force_login(user)
    assert client.get(f"/admin/moderation/settings/{CATS}/").status_code == 403
    user.user_permissions.add(Permission.objects.get(codename="view_chatsettings"))
    client.force_login(User.objects.get(pk=user.pk))
    page = client.get(f"/admin/moderation/settings/{CATS}/")
    assert page.status_code == 200
    assert b"settings-edit" not in page.content  # may look, not change


@pytest.mark.parametrize("chat_id", ["abc", "0", "-0x1", "-" + "9" * 19])
def test_not_a_chat_id_is_not_found(admin_client: Client, chat_id: str) -> None:
    assert admin_client.get(f"/admin/moderation/settings/{chat_id}/").status_code == 404
