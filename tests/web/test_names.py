"""Chats and people by name in the console (telegram_bot.ops.names): the lists of member
movements, warnings, moderation settings and chat preferences show a chat's title and a
person's name and @username, the id only as secondary text; the settings forms choose a chat
among the known ones by title instead of a typed id; the statistics' chat picker shows titles
alone; the privacy pages say whose id was typed."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from community.models import BotChat, MemberMovement
from moderation.models import ChatSettings, Warning, WarnState
from stats.models import ChatUserProfile, StatsChat
from telegram_bot.models import ChatPreference
from telegram_bot.ops.names import chat_choices

pytestmark = pytest.mark.django_db
CATS, DOGS, NAMELESS = -1001111111111, -1002222222222, -1003333333333
ANNA, BOB = 501, 502


@pytest.fixture
def known() -> None:
    BotChat.objects.create(
        chat_id=CATS,
        title="Cat lovers",
        chat_type="supergroup",
        status="administrator",
        is_member=True,
    )
    BotChat.objects.create(
        chat_id=NAMELESS, title="", chat_type="supergroup", status="member", is_member=True
    )
    BotChat.objects.create(
        chat_id=-1009, title="Left long ago", chat_type="group", status="left", is_member=False
    )
    StatsChat.objects.create(chat_id=DOGS, title="Dog people")
    ChatUserProfile.objects.create(chat_id=CATS, user_id=ANNA, display_name="Anna", username="anna")
    WarnState.objects.create(chat_id=CATS, user_id=BOB, name="Bob", username="")


def cells(page: str) -> str:
    """The page's text with the tags dropped (a cell's title and id read as text)."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))


def test_member_movements_name_the_chat_and_the_person(admin_client: Client, known: None) -> None:
    now = timezone.now()
    MemberMovement.objects.create(chat_id=CATS, user_id=ANNA, kind="join", at=now, day=now.date())
    MemberMovement.objects.create(chat_id=CATS, user_id=777, kind="leave", at=now, day=now.date())
    page = admin_client.get("/admin/community/membermovement/").content.decode()
    text = cells(page)
    assert "Cat lovers" in text and "Anna @anna" in text
    # The id is secondary text under the name, not the cell itself.
    assert re.search(r'Cat lovers<br><span class="quiet console-id">-1001111111111</span>', page)
    assert re.search(r'Anna @anna<br><span class="quiet console-id">501</span>', page)
    assert "777" in text  # nobody knows 777: the id alone


def test_warnings_name_the_member_and_the_moderator(admin_client: Client, known: None) -> None:
    Warning.objects.create(
        chat_id=CATS,
        user_id=BOB,
        moderator_id=ANNA,
        reason="spam",
        expires_at=timezone.now() + timedelta(days=30),
    )
    page = admin_client.get("/admin/moderation/warning/").content.decode()
    assert re.search(r'Bob<br><span class="quiet console-id">502</span>', page)
    assert re.search(r'Anna @anna<br><span class="quiet console-id">501</span>', page)
    assert re.search(r'Cat lovers<br><span class="quiet console-id">-1001111111111</span>', page)
    cells = re.findall(r'<td class="[^"]*\bfield-([a-z_]+)\b[^"]*"[^>]*>\s*([^<]*?)\s*<', page)
    assert cells and ("user_id", "502") not in cells  # the cells are found, no bare id is


def test_the_moderation_settings_list_names_chats(admin_client: Client, known: None) -> None:
    ChatSettings.objects.create(chat_id=CATS)
    page = admin_client.get("/admin/moderation/chatsettings/").content.decode()
    assert re.search(r'Cat lovers<br><span class="quiet console-id">-1001111111111</span>', page)


def test_chat_preferences_list_names_chats(admin_client: Client, known: None) -> None:
    ChatPreference.objects.create(chat_id=DOGS, time_zone="Europe/Berlin")
    page = admin_client.get("/admin/telegram_bot/chatpreference/").content.decode()
    assert re.search(r'Dog people<br><span class="quiet console-id">-1002222222222</span>', page)


def test_the_chooser_offers_known_chats_by_title(known: None) -> None:
    choices = dict(chat_choices())
    assert choices[CATS] == "Cat lovers" and choices[DOGS] == "Dog people"
    assert str(NAMELESS) in choices[NAMELESS]  # no title: the id is all there is
    assert -1009 not in choices  # the bot left it


def test_the_settings_form_chooses_a_chat_by_title(admin_client: Client, known: None) -> None:
    page = admin_client.get("/admin/moderation/chatsettings/add/").content.decode()
    assert re.search(r'<select name="chat_id"[^>]*>', page)
    assert re.search(r'<option value="-1001111111111">Cat lovers</option>', page)
    assert re.search(r'<select name="log_chat_id"[^>]*>', page)
    assert not re.search(r'<input[^>]+name="chat_id"', page)


def test_a_chat_the_bot_no_longer_knows_stays_chosen(admin_client: Client, known: None) -> None:
    ChatPreference.objects.create(chat_id=-1009, time_zone="UTC")
    row = ChatPreference.objects.get(chat_id=-1009)
    page = admin_client.get("/admin/community/chatpolicy/add/").content.decode()
    assert "-1009" not in page  # not offered
    settings = ChatSettings.objects.create(chat_id=CATS, log_chat_id=-1009)
    change = admin_client.get(f"/admin/moderation/chatsettings/{settings.pk}/change/")
    assert re.search(r'<option value="-1009" selected>', change.content.decode())
    assert row.chat_id == -1009


def test_the_chooser_refuses_what_is_not_a_chat_id(admin_client: Client, known: None) -> None:
    response = admin_client.post(
        "/admin/telegram_bot/chatpreference/add/",
        {"chat_id": "cats", "time_zone": "UTC", "language": ""},
    )
    assert response.status_code == 200
    assert "Select a valid choice" in response.content.decode()
    assert not ChatPreference.objects.exists()
    response = admin_client.post(
        "/admin/telegram_bot/chatpreference/add/",
        {"chat_id": str(CATS), "time_zone": "UTC", "language": ""},
    )
    assert response.status_code == 302
    assert ChatPreference.objects.get().chat_id == CATS


def test_the_statistics_picker_shows_titles_alone(admin_client: Client, known: None) -> None:
    page = admin_client.get("/admin/stats/").content.decode()
    assert re.search(r'<option value="-1002222222222"[^>]*>Dog people</option>', page)
    assert "(-1002222222222)" not in page


def test_the_privacy_page_says_whose_id_it_is(admin_client: Client, known: None) -> None:
    page = admin_client.get(f"/admin/privacy/export/?user_id={ANNA}").content.decode()
    assert 'value="501"' in page
    assert "User 501 is Anna @anna." in cells(page)
    unknown = admin_client.get("/admin/privacy/export/?user_id=999").content.decode()
    assert "privacy-person" not in unknown


def test_the_post_form_suggests_chats_by_title_and_the_list_names_them(
    admin_client: Client, known: None
) -> None:
    from content.models import Post

    page = admin_client.get("/admin/content/post/add/").content.decode()
    assert re.search(r'<input[^>]+name="channel"[^>]+list="id_channel-chats"', page)
    assert '<option value="-1001111111111">Cat lovers</option>' in page
    Post.objects.create(channel=str(CATS), text="Привет", status="draft")
    Post.objects.create(channel="@news_channel", text="Hi", status="draft")
    listed = admin_client.get("/admin/content/post/").content.decode()
    assert re.search(r'Cat lovers<br><span class="quiet console-id">-1001111111111</span>', listed)
    assert "@news_channel" in listed


def test_settings_saved_without_a_title_take_the_chosen_chats(
    admin_client: Client, known: None
) -> None:
    from tests.web.test_durations import form

    response = admin_client.post(
        "/admin/moderation/chatsettings/add/", {**form(), "chat_id": str(CATS), "title": ""}
    )
    assert response.status_code == 302
    assert ChatSettings.objects.get(chat_id=CATS).title == "Cat lovers"
