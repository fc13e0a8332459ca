"""Voice messages and video notes of a ticket play from the admin site: fetched with getFile
and streamed from the fake Bot API's file URL, the token never in what the browser gets."""

from __future__ import annotations

from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import Permission
from django.test import Client

from support import files
from support.models import Ticket, TicketMessage
from tests.conftest import OWNER_ID
from tests.fakes.telegram import FakeTelegramServer
from tests.fakes.telegram_core import DOWNLOAD
from tests.fakes.telegram_files import DOWNLOAD_LIMIT
from tests.support.helpers import (
    USER,
    last_message_id,
    message,
    open_ticket,
    reply_to,
    sent,
    texts,
)

LIST = "/admin/support/ticket/"
OGG = b"OggS\x00\x02" + bytes(range(256)) * 40  # 10 KB standing in for Opus audio


def file_url(ticket: Ticket, entry: TicketMessage) -> str:
    return f"{LIST}{ticket.pk}/entries/{entry.pk}/file/"


def body(response: Any) -> bytes:
    return b"".join(response.streaming_content)


def test_a_voice_message_plays_from_the_ticket_page(
    bot: FakeTelegramServer, admin_client: Client
) -> None:
    path = bot.add_file("voice-file-1", OGG, kind="voice")
    ticket, entry = open_ticket("voice", file_id="voice-file-1")
    page = admin_client.get(f"{LIST}{ticket.pk}/change/").content.decode()
    assert (
        f'<audio class="entry-player" controls preload="none" src="{file_url(ticket, entry)}"'
        in page
    )
    response = admin_client.get(file_url(ticket, entry))
    assert response.status_code == 200
    assert response["Content-Type"] == "audio/ogg"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Content-Length"] == str(len(OGG))
    assert body(response) == OGG
    assert [call.params for call in bot.calls_to("getFile")] == [{"file_id": "voice-file-1"}]
    assert [call.params for call in bot.calls_to(DOWNLOAD)] == [{"file_path": path}]
    token = settings.TELEGRAM_BOT_TOKEN
    assert token not in page and token.split(":")[1] not in str(response.items())


def test_a_video_note_plays_as_mp4(bot: FakeTelegramServer, admin_client: Client) -> None:
    bot.add_file("round-1", b"\x00\x00\x00\x18ftypmp42" + b"\x01" * 500, kind="video_note")
    ticket, entry = open_ticket("video_note", file_id="round-1")
    assert (
        '<video class="entry-player"'
        in admin_client.get(f"{LIST}{ticket.pk}/change/").content.decode()
    )
    response = admin_client.get(file_url(ticket, entry))
    assert (response.status_code, response["Content-Type"]) == (200, "video/mp4")
    assert body(response).startswith(b"\x00\x00\x00\x18ftyp")


def test_only_files_of_the_ticket_play_and_only_for_its_viewers(
    bot: FakeTelegramServer, admin_client: Client, client: Client, django_user_model: Any
) -> None:
    bot.add_file("voice-file-2", OGG)
    ticket, entry = open_ticket("voice", file_id="voice-file-2")
    other, _ = open_ticket("text")
    text_ticket, text_entry = other, other.messages.get()
    assert admin_client.get(file_url(text_ticket, text_entry)).status_code == 404
    assert admin_client.get(f"{LIST}{other.pk}/entries/{entry.pk}/file/").status_code == 404
    assert admin_client.post(file_url(ticket, entry)).status_code == 405
    anonymous = client.get(file_url(ticket, entry))
    assert anonymous.status_code == 302 and "/admin/login/" in anonymous["Location"]
    staff = django_user_model.objects.create_user("s", password="pw", is_staff=True)
    client.force_login(staff)
    assert client.get(file_url(ticket, entry)).status_code == 404
    staff.user_permissions.add(Permission.objects.get(codename="view_ticket"))
    client.force_login(django_user_model.objects.get(pk=staff.pk))
    assert body(client.get(file_url(ticket, entry))) == OGG
    assert len(bot.calls_to(DOWNLOAD)) == 1  # the refused requests never reached Telegram


def test_a_file_over_the_bound_is_refused_before_it_streams(
    bot: FakeTelegramServer, admin_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    bot.add_file("big", b"x" * (DOWNLOAD_LIMIT + 1))
    ticket, entry = open_ticket("voice", file_id="big")
    response = admin_client.get(file_url(ticket, entry))
    assert (response.status_code, response.content) == (
        413,
        b"The file is too large to show here: open it in Telegram.",
    )
    monkeypatch.setattr(files, "MAX_FILE_BYTES", 100)
    bot.add_file("small", b"y" * 101)
    ticket, entry = open_ticket("voice", file_id="small")
    assert admin_client.get(file_url(ticket, entry)).status_code == 413
    assert bot.calls_to(DOWNLOAD) == []


def test_telegram_failing_gives_a_short_error_without_the_token(
    bot: FakeTelegramServer, admin_client: Client
) -> None:
    ticket, entry = open_ticket("voice", file_id="forgotten-id")
    response = admin_client.get(file_url(ticket, entry))
    assert (response.status_code, response.content) == (
        502,
        b"Telegram did not give the file; try again later.",
    )
    assert response["X-Content-Type-Options"] == "nosniff"
    bot.add_file("voice-3", OGG)
    ticket, entry = open_ticket("voice", file_id="voice-3")
    bot.fail_next(DOWNLOAD, status=500)
    assert admin_client.get(file_url(ticket, entry)).status_code == 502
    assert body(admin_client.get(file_url(ticket, entry))) == OGG  # the next try works


def test_video_notes_go_to_support_and_back_without_a_caption(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    """sendVideoNote has no caption: the notice before it names the ticket."""
    post_update(message("/support"))
    round_video = {"file_id": "round-2", "file_unique_id": "u2", "length": 240, "duration": 3}
    post_update(message(None, video_note=round_video))
    entry = TicketMessage.objects.get(kind="video_note")
    assert entry.file_id == "round-2"
    [to_owner] = sent(bot, "sendVideoNote", chat_id=OWNER_ID)
    assert to_owner.params["video_note"] == "round-2" and "caption" not in to_owner.params
    notice = last_message_id(bot, OWNER_ID, "#1")
    answer = {**round_video, "file_id": "round-3"}
    reply = reply_to(notice, None, user_id=OWNER_ID, video_note=answer)
    post_update(reply)
    [to_user] = sent(bot, "sendVideoNote", chat_id=USER)
    assert to_user.params["video_note"] == "round-3" and "caption" not in to_user.params


def test_an_answer_with_a_file_whose_caption_would_be_cut_is_refused(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    """The user gets "Support · ticket #N", a blank line and the caption in one caption of at
    most 1,024 characters: a longer answer lost its end on the way, and the admin was told it
    was sent. Now it is refused, nothing sent; one that fits arrives whole."""
    from support.validation import ANSWER_CAPTION_LIMIT

    post_update(message("/support"))
    post_update(message("my order is late"))
    notice = last_message_id(bot, OWNER_ID, "#1")
    photo = [{"file_id": "answer-photo", "file_unique_id": "ap", "width": 90, "height": 90}]
    too_long = "x" * (ANSWER_CAPTION_LIMIT + 1)
    post_update(reply_to(notice, None, user_id=OWNER_ID, photo=photo, caption=too_long))
    assert sent(bot, "sendPhoto", chat_id=USER) == []
    assert "The caption is too long" in texts(bot, OWNER_ID)[-1]
    fits = "y" * ANSWER_CAPTION_LIMIT
    post_update(reply_to(notice, None, user_id=OWNER_ID, photo=photo, caption=fits))
    [to_user] = sent(bot, "sendPhoto", chat_id=USER)
    assert to_user.params["caption"].endswith("\n\n" + fits)
