"""Admin notifications of tickets are isolated: one admin who blocked the bot stops nobody."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from support.models import Ticket, TicketBotMessage
from telegram_bot.jobs.models import Job, JobStatus
from telegram_bot.jobs.runner import run_due
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
    assert post_update(message("/support is anyone there?"))["X-Update-Outcome"] == "processed"
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


def test_a_new_ticket_notice_lost_to_a_server_error_arrives_by_its_retry_and_is_linked(
    bot: FakeTelegramServer, post_update: Any, settings: Any
) -> None:
    settings.JOB_RETRY_BASE_DELAY = 0.01
    settings.JOB_RETRY_JITTER = 0
    # Telegram fails the next two sends: the user's confirmation and the owner's notice.
    bot.fail_next("sendMessage", status=500, times=2)
    assert post_update(message("/support it is broken"))["X-Update-Outcome"] == "processed"
    assert texts(bot, OWNER_ID) == [] and texts(bot, USER) == []
    assert not DeliveryFailure.objects.filter(chat_id=OWNER_ID).exists()  # retried, not failed
    Job.objects.filter(status=JobStatus.QUEUED).update(next_attempt=timezone.now())
    run_due("test-worker")  # both retries, then the link of the late notice
    [notice] = texts(bot, OWNER_ID)
    assert notice.startswith("New ticket #1")
    assert [t for t in texts(bot, USER) if t.startswith("Ticket #1 opened.")] == [
        texts(bot, USER)[0]
    ]
    assert TicketBotMessage.objects.filter(audience="admin", chat_id=OWNER_ID).exists()
    # Replying to the late notice answers the ticket, as with one sent at once.
    post_update(
        reply_to(last_message_id(bot, OWNER_ID, "New ticket #1"), "On it.", user_id=OWNER_ID)
    )
    assert texts(bot, USER)[-1] == "Support · ticket #1\n\nOn it."
    assert set(Job.objects.values_list("status", flat=True)) == {JobStatus.SUCCEEDED}


def test_a_late_notice_of_a_file_is_followed_by_the_file(
    bot: FakeTelegramServer, post_update: Any, settings: Any
) -> None:
    settings.JOB_RETRY_BASE_DELAY = 0.01
    settings.JOB_RETRY_JITTER = 0
    post_update(message("/support"))
    photo = [{"file_id": "shot", "file_unique_id": "s", "width": 10, "height": 10}]
    bot.fail_next("sendMessage", status=500, times=2)  # the user's confirmation, the notice
    post_update(message(None, photo=photo, caption="error screen"))  # opens the ticket
    assert sent(bot, "sendPhoto") == []  # the file follows the notice, which did not arrive
    Job.objects.filter(status=JobStatus.QUEUED).update(next_attempt=timezone.now())
    run_due("test-worker")
    notice = last_message_id(bot, OWNER_ID, "New ticket #1")
    [file] = sent(bot, "sendPhoto")
    assert (file.params["chat_id"], file.params["photo"]) == (OWNER_ID, "shot")
    assert file.params["reply_parameters"]["message_id"] == notice
    linked = TicketBotMessage.objects.filter(audience="admin", chat_id=OWNER_ID)
    assert sorted(linked.values_list("message_id", flat=True)) == [notice, notice + 1]
    # Replying to the file answers the ticket, as with one sent with its notice.
    post_update(reply_to(notice + 1, "Thanks for the screenshot", user_id=OWNER_ID))
    assert texts(bot, USER)[-1] == "Support · ticket #1\n\nThanks for the screenshot"
