"""The typed helpers: each sends parameters the Bot API spec accepts and returns the result.

The fake rejects any parameter the spec does not list, so a passing call proves the names.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from telegram_bot.client import TelegramClient
from telegram_bot.errors import TelegramApiError
from tests.fakes.telegram import FakeTelegram, FakeTelegramTransport

MARKUP = {"inline_keyboard": [[{"text": "Yes", "callback_data": "yes"}]]}


@pytest.fixture
def fake(fake_transport: FakeTelegramTransport) -> FakeTelegram:
    return fake_transport.fake


def test_send_message(local_client: TelegramClient, fake: FakeTelegram) -> None:
    message = local_client.send_message(
        chat_id=5, text="<b>hi</b>", parse_mode="HTML", reply_markup=MARKUP, protect_content=True
    )
    assert message["text"] == "<b>hi</b>"
    assert fake.calls_to("sendMessage")[0].params["protect_content"] is True


def test_edit_helpers(local_client: TelegramClient, fake: FakeTelegram) -> None:
    sent = local_client.send_message(chat_id=5, text="v1")
    edited = local_client.edit_message_text(chat_id=5, message_id=sent["message_id"], text="v2")
    assert isinstance(edited, dict)
    assert edited["text"] == "v2"
    marked = local_client.edit_message_reply_markup(
        chat_id=5, message_id=sent["message_id"], reply_markup=MARKUP
    )
    assert isinstance(marked, dict)
    assert marked["reply_markup"] == MARKUP
    photo = local_client.send_photo(chat_id=5, photo="file-id", caption="old")
    recaptioned = local_client.edit_message_caption(
        chat_id=5, message_id=photo["message_id"], caption="new"
    )
    assert isinstance(recaptioned, dict)
    assert recaptioned["caption"] == "new"
    assert local_client.edit_message_text(inline_message_id="inl-1", text="x") is True


def test_an_edit_that_changes_nothing_is_success_and_other_refusals_raise(
    local_client: TelegramClient, fake: FakeTelegram
) -> None:
    sent = local_client.send_message(chat_id=5, text="same")
    assert local_client.edit_message_text(chat_id=5, message_id=sent["message_id"], text="same")
    assert "not modified" in fake.calls_to("editMessageText")[0].description
    fake.fail_next(
        "editMessageText", status=400, description="Bad Request: message to edit not found"
    )
    with pytest.raises(TelegramApiError):
        local_client.edit_message_text(chat_id=5, message_id=sent["message_id"], text="new")


def test_copy_message_returns_a_message_id(local_client: TelegramClient) -> None:
    source = local_client.send_message(chat_id=5, text="original")
    copied = local_client.copy_message(chat_id=6, from_chat_id=5, message_id=source["message_id"])
    assert copied == {"message_id": 1}


def test_boolean_helpers(local_client: TelegramClient, fake: FakeTelegram) -> None:
    until = datetime(2030, 1, 1, tzinfo=UTC)
    assert local_client.answer_callback_query(callback_query_id="q1", text="Done") is True
    assert local_client.delete_message(chat_id=5, message_id=1) is True
    assert local_client.restrict_chat_member(
        chat_id=-1001, user_id=9, permissions={"can_send_messages": False}, until_date=until
    )
    assert local_client.approve_chat_join_request(chat_id=-1001, user_id=9) is True
    assert local_client.decline_chat_join_request(chat_id=-1001, user_id=10) is True
    restrict = fake.calls_to("restrictChatMember")[0]
    assert restrict.params["until_date"] == int(until.timestamp())


def test_until_date_must_be_timezone_aware(local_client: TelegramClient) -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        local_client.restrict_chat_member(
            chat_id=-1001, user_id=9, permissions={}, until_date=datetime(2030, 1, 1)
        )


def test_polls(local_client: TelegramClient, fake: FakeTelegram) -> None:
    sent = local_client.send_poll(
        chat_id=-1001, question="Lunch?", options=["Pizza", {"text": "Soup"}], is_anonymous=False
    )
    options = fake.calls_to("sendPoll")[0].params["options"]
    assert options == [{"text": "Pizza"}, {"text": "Soup"}]
    assert sent["poll"]["is_anonymous"] is False
    stopped = local_client.stop_poll(chat_id=-1001, message_id=sent["message_id"])
    assert stopped["is_closed"] is True
    assert [o["text"] for o in stopped["options"]] == ["Pizza", "Soup"]


def test_webhook_helpers(local_client: TelegramClient, fake: FakeTelegram) -> None:
    assert local_client.set_webhook(
        url="https://bot.example.org/telegram/webhook",
        secret_token="s3cret_token-1",
        allowed_updates=("message", "callback_query"),
        max_connections=10,
        drop_pending_updates=True,
    )
    info = local_client.get_webhook_info()
    assert info["url"] == "https://bot.example.org/telegram/webhook"
    assert info["allowed_updates"] == ["message", "callback_query"]
    assert fake.webhook is not None
    assert fake.webhook["secret_token"] == "s3cret_token-1"
    assert local_client.delete_webhook(drop_pending_updates=True) is True
    assert local_client.get_webhook_info()["url"] == ""


def test_a_certificate_is_uploaded(local_client: TelegramClient, fake: FakeTelegram) -> None:
    local_client.set_webhook(url="https://bot.example.org/hook", certificate=b"-----BEGIN")
    assert local_client.get_webhook_info()["has_custom_certificate"] is True


def test_get_updates_and_get_me(local_client: TelegramClient, fake: FakeTelegram) -> None:
    fake.push_update({"update_id": 10, "message": {"message_id": 1}})
    fake.push_update({"update_id": 11, "message": {"message_id": 2}})
    updates = local_client.get_updates(offset=0, limit=1, allowed_updates=["message"])
    assert [u["update_id"] for u in updates] == [10]
    assert [u["update_id"] for u in local_client.get_updates(offset=11, timeout=0)] == [11]
    me = local_client.get_me()
    assert me["is_bot"] is True
    assert me["id"] == local_client.bot_id
