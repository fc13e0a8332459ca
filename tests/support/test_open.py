"""Opening tickets: /support <text>, /support + one message, validation, numbering, re-delivery."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.db import OperationalError

from support.models import Ticket, TicketMessage
from telegram_bot.pipeline import idempotency
from telegram_bot.state import KVStore
from tests.conftest import OWNER_ID
from tests.fakes.telegram import FakeTelegramServer
from tests.faults import fail_once_in
from tests.support.helpers import USER, message, sent, texts

PHOTO = [
    {"file_id": "photo-small", "file_unique_id": "u1", "width": 90, "height": 90},
    {"file_id": "photo-large", "file_unique_id": "u2", "width": 1280, "height": 960},
]


def test_it_opens_a_ticket_with_support_text_and_confirms_its_number(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    response = post_update(message("/support My invoice is wrong"))
    assert response["X-Update-Outcome"] == "processed"
    ticket = Ticket.objects.get()
    assert (ticket.number, ticket.user_id, ticket.status) == (1, USER, "open")
    assert [m.text for m in ticket.messages.all()] == ["My invoice is wrong"]
    [confirmation] = texts(bot, USER)
    assert confirmation.startswith("Ticket #1 opened.")
    [notice] = sent(bot, chat_id=OWNER_ID)
    assert (
        "New ticket #1" in notice.params["text"] and "My invoice is wrong" in notice.params["text"]
    )
    [[reply, resolve]] = notice.params["reply_markup"]["inline_keyboard"]
    assert (reply["text"], reply["callback_data"]) == ("Reply", f"sup:reply:{ticket.pk}")
    assert (resolve["text"], resolve["callback_data"]) == ("Resolve", f"sup:resolve:{ticket.pk}")


def test_it_opens_a_ticket_with_support_then_one_message(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    post_update(message("/support"))
    assert "Send your request as one message" in texts(bot, USER)[0]
    assert not Ticket.objects.exists()
    post_update(message("The app crashes on start"))
    ticket = Ticket.objects.get()
    assert ticket.messages.get().text == "The app crashes on start"
    assert texts(bot, USER)[1].startswith("Ticket #1 opened.")
    # The workflow is over: the next message is a follow-up, not a second ticket.
    post_update(message("It happens on Android 14"))
    assert Ticket.objects.count() == 1
    assert ticket.messages.count() == 2
    assert texts(bot, USER)[2] == "Added to ticket #1."


@pytest.mark.parametrize(
    ("fields", "kind", "file_id"),
    [
        ({"photo": PHOTO, "caption": "screenshot"}, "photo", "photo-large"),
        (
            {"document": {"file_id": "doc-1", "file_unique_id": "d", "file_name": "log.txt"}},
            "document",
            "doc-1",
        ),
        (
            {"voice": {"file_id": "voice-1", "file_unique_id": "v", "duration": 4}},
            "voice",
            "voice-1",
        ),
    ],
)
def test_it_keeps_photos_documents_and_voice_as_file_ids(
    bot: FakeTelegramServer, post_update: Any, fields: dict[str, Any], kind: str, file_id: str
) -> None:
    post_update(message("/support"))
    post_update(message(None, **fields))
    entry = TicketMessage.objects.get()
    assert (entry.kind, entry.file_id) == (kind, file_id)
    assert entry.text == fields.get("caption", "")
    method = {"photo": "sendPhoto", "document": "sendDocument", "voice": "sendVoice"}[kind]
    [to_admin] = sent(bot, method, chat_id=OWNER_ID)
    assert to_admin.params[kind] == file_id
    assert "Ticket #1" in to_admin.params["caption"]


@pytest.mark.parametrize("text", ["", "   ", "\n\t  \n"])
def test_it_refuses_empty_or_whitespace_input_and_creates_nothing(
    bot: FakeTelegramServer, post_update: Any, text: str
) -> None:
    post_update(message("/support"))
    post_update(message(text))
    assert not Ticket.objects.exists() and not TicketMessage.objects.exists()
    assert "The message is empty" in texts(bot, USER)[-1]
    assert sent(bot, chat_id=OWNER_ID) == []
    # The workflow still waits: a proper message now opens the ticket.
    post_update(message("Now with words"))
    assert Ticket.objects.get().number == 1


def test_it_refuses_text_over_4000_characters_and_creates_nothing(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    post_update(message("/support " + "x" * 4001))
    assert "too long (4001 characters; at most 4000)" in texts(bot, USER)[-1]
    post_update(message("/support"))
    post_update(message("y" * 4001))
    assert "too long" in texts(bot, USER)[-1]
    assert not Ticket.objects.exists() and not TicketMessage.objects.exists()
    assert sent(bot, chat_id=OWNER_ID) == []
    post_update(message("z" * 4000))
    assert len(Ticket.objects.get().messages.get().text) == 4000
    # The admin notification stays within Telegram's 4096 characters.
    assert len(sent(bot, chat_id=OWNER_ID)[0].params["text"]) <= 4096


def test_it_refuses_message_types_it_cannot_keep(bot: FakeTelegramServer, post_update: Any) -> None:
    post_update(message("/support"))
    post_update(message(None, location={"latitude": 1.5, "longitude": 2.5}))
    assert "Support accepts text, photos, documents, voice messages, videos" in texts(bot, USER)[-1]
    assert not Ticket.objects.exists()


def test_an_expired_support_workflow_says_start_again_and_creates_nothing(
    bot: FakeTelegramServer, post_update: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    post_update(message("/support"))
    later = int(time.time() * 1000) + 601_000  # the default wait is 600 s
    monkeypatch.setattr("telegram_bot.state.workflows._now_ms", lambda: later)
    post_update(message("Sorry, I was away"))
    assert texts(bot, USER)[-1] == (
        "Your /support request expired. Send /support again to open a ticket."
    )
    assert not Ticket.objects.exists() and not TicketMessage.objects.exists()
    # Told once: the next message is an ordinary one (no open ticket: guidance, nothing stored).
    post_update(message("hello?"))
    assert texts(bot, USER)[-1].startswith("You have no open support ticket.")
    assert not TicketMessage.objects.exists()


def test_the_workflow_wait_follows_the_setting(
    bot: FakeTelegramServer, post_update: Any, settings: Any
) -> None:
    settings.SUPPORT_OPEN_TTL_SECONDS = 1
    post_update(message("/support"))
    time.sleep(1.05)
    post_update(message("too late"))
    assert "expired" in texts(bot, USER)[-1]
    assert not Ticket.objects.exists()


def test_a_user_may_have_several_open_tickets_and_a_message_goes_to_the_newest(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    post_update(message("/support first problem"))
    post_update(message("/support second problem"))
    assert list(Ticket.objects.order_by("number").values_list("number", "status")) == [
        (1, "open"),
        (2, "open"),
    ]
    post_update(message("more about it"))
    assert Ticket.objects.count() == 2
    newest = Ticket.objects.get(number=2)
    assert [m.text for m in newest.messages.all()] == ["second problem", "more about it"]
    assert texts(bot, USER)[-1] == "Added to ticket #2."


def test_numbers_are_sequential_across_users(bot: FakeTelegramServer, post_update: Any) -> None:
    for user_id in (3001, 3002, 3003):
        post_update(message("/support help", user_id=user_id))
    assert list(Ticket.objects.order_by("number").values_list("number", "user_id")) == [
        (1, 3001),
        (2, 3002),
        (3, 3003),
    ]
    assert texts(bot, 3003)[0].startswith("Ticket #3 opened.")


def test_a_redelivered_update_creates_no_second_ticket_and_no_second_confirmation(
    bot: FakeTelegramServer, post_update: Any, memory_store: KVStore
) -> None:
    update = message("/support please call me back")
    assert post_update(update)["X-Update-Outcome"] == "processed"
    assert post_update(update)["X-Update-Outcome"] == "duplicate"
    # The done-marker lost (the KV store failed after the commit): the handler runs again.
    idempotency.forget(memory_store, update["update_id"])
    assert post_update(update)["X-Update-Outcome"] == "processed"
    assert Ticket.objects.count() == 1 and TicketMessage.objects.count() == 1
    assert len(texts(bot, USER)) == 1
    assert len(sent(bot, chat_id=OWNER_ID)) == 1


def test_a_redelivered_workflow_message_creates_no_second_ticket(
    bot: FakeTelegramServer, post_update: Any, memory_store: KVStore
) -> None:
    post_update(message("/support"))
    update = message("the message that opens it")
    post_update(update)
    idempotency.forget(memory_store, update["update_id"])
    post_update(update)
    assert Ticket.objects.count() == 1
    assert len([t for t in texts(bot, USER) if t.startswith("Ticket #1 opened.")]) == 1


def test_a_database_failure_after_the_commit_is_finished_by_the_redelivery(
    bot: FakeTelegramServer, post_update: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from support import delivery

    fail_once_in(monkeypatch, delivery, "notify_admins", OperationalError("database went away"))
    update = message("/support the ticket survives")
    first = post_update(update)
    assert first.status_code == 503  # Telegram will deliver it again
    assert Ticket.objects.count() == 1 and len(texts(bot, USER)) == 1
    assert post_update(update)["X-Update-Outcome"] == "processed"
    assert Ticket.objects.count() == 1
    assert len(texts(bot, USER)) == 1  # the confirmation is not sent twice
    assert len(sent(bot, chat_id=OWNER_ID)) == 1  # the admins are notified, once
    assert TicketMessage.objects.get().admins_notified_at is not None


def test_support_in_a_group_points_to_the_private_chat(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    group = message("/support my secret", user_id=USER)
    group["message"]["chat"] = {"id": -100777, "type": "supergroup", "title": "Community"}
    post_update(group)
    assert texts(bot, -100777) == ["To contact support, send /support to me in a private chat."]
    assert not Ticket.objects.exists() and not TicketMessage.objects.exists()
