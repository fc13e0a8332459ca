"""Admin notifications of tickets are isolated: one admin who blocked the bot stops nobody."""

from __future__ import annotations

from typing import Any

from support.models import Ticket, TicketBotMessage
from telegram_bot.models import BlockedChat, BotAdmin, DeliveryFailure
from tests.conftest import OWNER_ID
from tests.fakes.telegram import FakeTelegramServer
from tests.support.helpers import USER, last_message_id, message, reply_to, sent, texts


def test_an_admin_who_blocked_the_bot_does_not_stop_the_others(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    for admin_id in (11, 12, 13):
        BotAdmin.objects.create(telegram_id=admin_id)
    bot.block_chat(12)
    assert post_update(message("/support is anyone there?")).json()["outcome"] == "processed"
    ticket = Ticket.objects.get()
    for admin_id in (OWNER_ID, 11, 13):
        [notice] = sent(bot, chat_id=admin_id)
        assert "New ticket #1" in notice.params["text"]
    assert [c.failed for c in bot.calls_to("sendMessage") if c.params["chat_id"] == 12] == [True]
    failure = DeliveryFailure.objects.get()
    assert (failure.chat_id, failure.purpose) == (12, "support #1")
    assert BlockedChat.objects.filter(chat_id=12).exists()
    assert texts(bot, USER)[0].startswith("Ticket #1 opened.")
    linked = set(
        TicketBotMessage.objects.filter(audience="admin").values_list("chat_id", flat=True)
    )
    assert linked == {OWNER_ID, 11, 13}
    # The others can work the ticket as usual; the blocked admin is skipped next time.
    post_update(reply_to(last_message_id(bot, 13, "#1"), "On it.", user_id=13))
    assert texts(bot, USER)[-1] == "Support · ticket #1\n\nOn it."
    post_update(message("thanks, waiting"))
    assert len(bot.calls_to("sendMessage")) == len(sent(bot)) + 1  # no new attempt for 12
    assert ticket.messages.count() == 3


def test_a_file_from_the_user_reaches_every_reachable_admin(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    BotAdmin.objects.create(telegram_id=11)
    BotAdmin.objects.create(telegram_id=12)
    bot.block_chat(11)
    post_update(message("/support"))
    photo = [{"file_id": "shot", "file_unique_id": "s", "width": 10, "height": 10}]
    post_update(message(None, photo=photo, caption="error screen"))
    photos = sent(bot, "sendPhoto")
    assert sorted(c.params["chat_id"] for c in photos) == sorted([OWNER_ID, 12])
    for call in photos:
        assert call.params["photo"] == "shot"
        assert call.params["caption"] == "Ticket #1: error screen"
    # Replying to the photo itself answers the ticket too.
    post_update(
        reply_to(last_message_id(bot, 12, "error screen"), "Thanks for the screenshot", user_id=12)
    )
    assert texts(bot, USER)[-1] == "Support · ticket #1\n\nThanks for the screenshot"
