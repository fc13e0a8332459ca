"""The ticket page shows a conversation's attachments: images inline, other files as
downloads, served with the type their bytes show, ``nosniff`` and a sandboxing CSP."""

from __future__ import annotations

from typing import Any

from django.test import Client

from support.models import Ticket, TicketMessage
from tests.fakes.telegram import FakeTelegramServer
from tests.support.helpers import open_ticket

LIST = "/admin/support/ticket/"
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF" + b"\x00" * 200
WEBP = b"RIFF\x10\x00\x00\x00WEBPVP8 " + b"\x00" * 100
PAGE = b"<html><script>alert(document.cookie)</script></html>"


def file_url(ticket: Ticket, entry: TicketMessage) -> str:
    return f"{LIST}{ticket.pk}/entries/{entry.pk}/file/"


def body(response: Any) -> bytes:
    return b"".join(response.streaming_content)


def test_a_photo_is_shown_inline_with_the_type_its_bytes_show(
    bot: FakeTelegramServer, admin_client: Client
) -> None:
    bot.add_file("photo-1", JPEG, kind="photo")
    ticket, entry = open_ticket("photo", file_id="photo-1", text="the broken box")
    page = admin_client.get(f"{LIST}{ticket.pk}/change/").content.decode()
    assert f'src="{file_url(ticket, entry)}"' in page and 'class="entry-image entry-photo"' in page
    response = admin_client.get(file_url(ticket, entry))
    assert (response.status_code, response["Content-Type"]) == (200, "image/jpeg")
    assert response["Content-Disposition"].startswith("inline;")
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Content-Security-Policy"] == "sandbox; default-src 'none'"
    assert body(response) == JPEG


def test_a_sticker_is_an_image_and_a_document_a_download(
    bot: FakeTelegramServer, admin_client: Client
) -> None:
    bot.add_file("sticker-1", WEBP, kind="sticker")
    ticket, sticker = open_ticket("sticker", file_id="sticker-1")
    assert admin_client.get(file_url(ticket, sticker))["Content-Type"] == "image/webp"
    bot.add_file("doc-1", PAGE, kind="document")
    ticket, document = open_ticket("document", file_id="doc-1")
    page = admin_client.get(f"{LIST}{ticket.pk}/change/").content.decode()
    assert f'<a class="entry-download" href="{file_url(ticket, document)}">' in page
    response = admin_client.get(file_url(ticket, document))
    assert response["Content-Type"] == "application/octet-stream"
    assert response["Content-Disposition"].startswith("attachment;")
    assert body(response) == PAGE


def test_a_photo_whose_bytes_are_a_page_is_never_shown_as_one(
    bot: FakeTelegramServer, admin_client: Client
) -> None:
    bot.add_file("fake-photo", PAGE, kind="photo")
    ticket, entry = open_ticket("photo", file_id="fake-photo")
    response = admin_client.get(file_url(ticket, entry))
    assert response["Content-Type"] == "application/octet-stream"
    assert response["Content-Disposition"].startswith("attachment;")


def test_a_file_over_the_download_limit_is_not_fetched(
    bot: FakeTelegramServer, admin_client: Client
) -> None:
    ticket, entry = open_ticket("video", file_id="huge-video")
    TicketMessage.objects.filter(pk=entry.pk).update(file_size=50 * 1024 * 1024)
    page = admin_client.get(f"{LIST}{ticket.pk}/change/").content.decode()
    assert "Over 20 MB: too large to show here" in page
    assert admin_client.get(file_url(ticket, entry)).status_code == 413
    assert not bot.calls_to("getFile")


def test_text_entries_have_no_file(bot: FakeTelegramServer, admin_client: Client) -> None:
    ticket, entry = open_ticket("text", text="hello")
    assert admin_client.get(file_url(ticket, entry)).status_code == 404
