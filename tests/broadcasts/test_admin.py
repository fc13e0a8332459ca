"""The console: a broadcast form refuses what Telegram would (a short reason, nothing saved or
sent); the actions preview, start, pause, resume and cancel, audited; progress is shown."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from broadcasts.models import Broadcast, BroadcastStatus
from telegram_bot.models import AuditEntry
from tests.broadcasts.conftest import make_broadcast, subscribe
from tests.fakes.telegram import FakeTelegramServer

pytestmark = pytest.mark.django_db
LIST = "/admin/broadcasts/broadcast/"


def form(**fields: Any) -> dict[str, Any]:
    data = {
        "text": "Hello",
        "parse_mode": "",
        "photo": "",
        "media_kind": "photo",
        "buttons": "",
        "segment_language": "",
        "segment_chat_id": "",
        "segment_joined_since": "",
        "send_at": "",
        "preview_chat_id": "1000",
    }
    data.update(fields)
    return data


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"photo": "AgACAgIAAxkBAAIB", "text": "x" * 1025}, "caption is at most 1024"),
        ({"text": "x" * 4097}, "at most 4096"),
        ({"text": "   "}, "Write a text"),
        ({"buttons": '[[{"text": "a"}]]'}, "Each button"),
        ({"buttons": "not json"}, "Buttons are JSON"),
        ({"buttons": '[[{"text": "a", "url": "javascript:alert(1)"}]]'}, "starts with https"),
        ({"photo": "http://insecure.example/a.jpg"}, "neither a Telegram file id"),
        ({"segment_language": "english!"}, "such as en"),
        ({"segment_chat_id": "abc"}, "whole number"),
        ({"photo": "AgACAgIAAxkBAAIB", "media_kind": "sticker"}, "not one of the available"),
    ],
)
def test_bad_input_is_refused_in_the_form_with_a_short_reason(
    admin_client: Client, bot: FakeTelegramServer, fields: dict[str, Any], reason: str
) -> None:
    response = admin_client.post(f"{LIST}add/", form(**fields))
    assert response.status_code == 200
    assert reason in response.content.decode()
    assert not Broadcast.objects.exists()
    assert not bot.calls


def test_a_good_form_saves_a_draft_and_the_actions_run_it(
    admin_client: Client, bot: FakeTelegramServer
) -> None:
    subscribe(11, 12)
    buttons = '[[{"text": "Site", "url": "https://example.org"}]]'
    response = admin_client.post(
        f"{LIST}add/", form(text="<i>Hi</i>", parse_mode="HTML", buttons=buttons)
    )
    assert response.status_code == 302
    broadcast = Broadcast.objects.get()
    assert broadcast.status == BroadcastStatus.DRAFT and broadcast.created_by.startswith("admin:")

    def act(action: str) -> str:
        page = admin_client.post(
            LIST, {"action": action, "_selected_action": [broadcast.pk]}, follow=True
        )
        return page.content.decode()

    assert "preview" in act("start").lower()  # refused: no preview yet
    assert "Preview of broadcast" in act("send_preview")
    assert bot.calls_to("sendMessage")[-1].params["chat_id"] == 1000
    assert "started" in act("start")
    broadcast.refresh_from_db()
    assert broadcast.status == BroadcastStatus.SCHEDULED
    assert "cancelled" in act("cancel")
    page = admin_client.get(f"{LIST}{broadcast.pk}/change/").content.decode()
    assert "0 sent" in page
    actions = set(AuditEntry.objects.values_list("action", flat=True))
    assert {"broadcast.preview", "broadcast.start", "broadcast.cancel"} <= actions


def test_the_form_explains_the_limits(admin_client: Client, bot: FakeTelegramServer) -> None:
    page = admin_client.get(f"{LIST}add/").content.decode()
    assert "30 messages a second" in page


def test_a_started_broadcast_can_no_longer_be_edited_or_deleted(
    admin_client: Client, bot: FakeTelegramServer
) -> None:
    broadcast = make_broadcast("Fixed", status=BroadcastStatus.SENDING)
    admin_client.post(f"{LIST}{broadcast.pk}/change/", form(text="Changed"))
    broadcast.refresh_from_db()
    assert broadcast.text == "Fixed"
    response = admin_client.post(f"{LIST}{broadcast.pk}/delete/", {"post": "yes"})
    assert response.status_code == 403
