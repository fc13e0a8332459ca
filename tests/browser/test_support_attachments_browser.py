"""A ticket's conversation with attachments in a real browser, at desktop and phone widths:
the user's photo and sticker shown inline, their document as a download, the staff's photo
answer from the topic, and a staff note marked as internal."""

from __future__ import annotations

import struct
import zlib
from typing import Any

import httpx
import pytest

from support.models import Ticket
from tests.builders import make_message_update
from tests.conftest import WEBHOOK_SECRET
from tests.fakes.telegram import FakeTelegramServer

USER = 4343
STAFF = -1001234567890
AGENT = 3001


def png(width: int, height: int) -> bytes:
    """A valid PNG of one colour, so that the browser really decodes it."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    raw = b"".join(b"\x00" + b"\xcc\x55\x22" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def post(live_server: Any, update: dict[str, Any]) -> None:
    response = httpx.post(
        f"{live_server.url}/telegram/webhook",
        json=update,
        headers={"X-Telegram-Bot-Api-Secret-Token": WEBHOOK_SECRET},
    )
    assert response.headers["X-Update-Outcome"] == "processed"


def photo(file_id: str) -> list[dict[str, Any]]:
    return [{"file_id": file_id, "file_unique_id": file_id, "width": 640, "height": 480}]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", [1440, 390])
def test_the_ticket_page_shows_the_conversations_attachments(
    admin_page: Any, live_server: Any, live_bot: FakeTelegramServer, settings: Any, width: int
) -> None:
    settings.SUPPORT_STAFF_CHAT_ID = STAFF
    live_bot.set_chat(STAFF, "supergroup", title="Support staff", is_forum=True)
    live_bot.add_file("user-photo", png(640, 480), kind="photo")
    live_bot.add_file("staff-photo", png(320, 200), kind="photo")
    live_bot.add_file("user-doc", b"%PDF-1.4 not really", kind="document")
    post(
        live_server,
        make_message_update("/support the parcel arrived broken", chat_id=USER, user_id=USER),
    )
    post(
        live_server,
        make_message_update(
            None, chat_id=USER, user_id=USER, photo=photo("user-photo"), caption="the box"
        ),
    )
    document = {"file_id": "user-doc", "file_unique_id": "d", "file_name": "receipt.pdf"}
    post(live_server, make_message_update(None, chat_id=USER, user_id=USER, document=document))
    topic = int(Ticket.objects.get().topic_id or 0)
    in_topic = {"message_thread_id": topic, "is_topic_message": True, "chat_type": "supergroup"}
    post(
        live_server,
        make_message_update("!refund approved by Anna", chat_id=STAFF, user_id=AGENT, **in_topic),
    )
    post(
        live_server,
        make_message_update(
            None,
            chat_id=STAFF,
            user_id=AGENT,
            photo=photo("staff-photo"),
            caption="a new one is on its way",
            **in_topic,
        ),
    )

    admin_page.set_viewport_size({"width": width, "height": 900})
    ticket = Ticket.objects.get()
    admin_page.goto(f"{live_server.url}/admin/support/ticket/{ticket.pk}/change/")
    images = admin_page.locator("#conversation img.entry-image")
    assert images.count() == 2
    for index in range(2):
        image = images.nth(index)
        image.scroll_into_view_if_needed()
        admin_page.wait_for_function(
            "img => img.complete && img.naturalWidth > 0", arg=image.element_handle()
        )
        box = image.bounding_box()
        assert box is not None and 0 < box["width"] <= width
    link = admin_page.locator("#conversation a.entry-download")
    assert link.inner_text().strip() == "Download receipt.pdf"
    conversation = admin_page.inner_text("#conversation")
    assert "staff note" in conversation and "refund approved by Anna" in conversation
    assert "a new one is on its way" in conversation and "to the user: delivered" in conversation
    # Nothing runs off the side of a phone's screen.
    overflow = admin_page.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert overflow <= 0
