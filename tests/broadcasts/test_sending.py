"""Sending a broadcast against the fake Bot API: preview first, every recipient once with one
recorded outcome, faults recorded without a retry storm, a 429 storm survived, pause, resume,
cancel, and answers not held behind a broadcast."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from broadcasts import services
from broadcasts.models import (
    BroadcastRecipient,
    BroadcastStatus,
    RecipientStatus,
    Subscriber,
    SubscriberStatus,
)
from broadcasts.selectors import progress
from broadcasts.sending import _begin, broadcast_run
from telegram_bot.bot import get_client
from telegram_bot.client import bulk_sends
from telegram_bot.jobs.models import Job
from telegram_bot.jobs.runner import run_due
from tests.broadcasts.conftest import deliveries, make_broadcast, start_now, subscribe
from tests.fakes.telegram import FakeTelegramServer
from tests.fakes.telegram_limits import TelegramLimits

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]
OWNER = 1000


def run_to_the_end(broadcast_id: int, timeout: float = 60) -> None:
    """Run the broadcast's jobs as the worker does until none is left."""
    deadline = time.monotonic() + timeout
    while True:
        Job.objects.filter(status="queued").update(next_attempt=timezone.now())
        if not run_due("test-worker"):
            break
        assert time.monotonic() < deadline, "the broadcast did not finish"


def test_a_preview_reaches_the_author_first_then_everyone_once(bot: FakeTelegramServer) -> None:
    subscribe(*range(2001, 2031))
    broadcast = make_broadcast(
        "<b>News</b>", parse_mode="HTML", buttons=[[{"text": "Open", "url": "https://x.org"}]]
    )
    with pytest.raises(services.BroadcastError, match="preview"):
        services.broadcast_start(broadcast_id=broadcast.pk)
    start_now(broadcast)
    first = bot.calls_to("sendMessage")[0]
    assert first.params["chat_id"] == OWNER and first.params["parse_mode"] == "HTML"
    run_to_the_end(broadcast.pk)

    broadcast.refresh_from_db()
    assert broadcast.status == BroadcastStatus.DONE
    sent = deliveries(bot, "<b>News</b>")
    assert sent.pop(OWNER) == 1  # the preview
    assert sent == dict.fromkeys(range(2001, 2031), 1)
    p = progress(broadcast.pk)
    assert (p.total, p.sent, p.left) == (30, 30, 0)
    assert broadcast.recipients_total == 30
    call = next(c for c in bot.calls_to("sendMessage") if c.params["chat_id"] == 2001)
    assert call.params["reply_markup"]["inline_keyboard"][0][0]["url"] == "https://x.org"


@pytest.mark.parametrize(
    ("kind", "method", "field"),
    [
        ("photo", "sendPhoto", "photo"),
        ("video", "sendVideo", "video"),
        ("document", "sendDocument", "document"),
    ],
)
def test_a_media_broadcast_is_sent_with_its_method_and_caption(
    bot: FakeTelegramServer, kind: str, method: str, field: str
) -> None:
    subscribe(2101, 2102)
    link = f"https://example.org/file.{kind}"
    broadcast = start_now(make_broadcast("The caption", photo=link, media_kind=kind))
    run_to_the_end(broadcast.pk)
    calls = [c for c in bot.calls_to(method) if not c.failed]
    assert sorted(c.params["chat_id"] for c in calls) == [OWNER, 2101, 2102]
    assert all(c.params[field] == link and c.params["caption"] == "The caption" for c in calls)
    assert not bot.calls_to("sendMessage")


def test_content_changed_after_the_preview_needs_a_new_preview(bot: FakeTelegramServer) -> None:
    broadcast = make_broadcast("First")
    services.broadcast_preview(broadcast_id=broadcast.pk)
    broadcast.text = "Second"
    broadcast.save()
    with pytest.raises(services.BroadcastError, match="preview"):
        services.broadcast_start(broadcast_id=broadcast.pk)


def test_a_preview_telegram_refuses_is_reported_and_does_not_count(
    bot: FakeTelegramServer,
) -> None:
    broadcast = make_broadcast("<b>broken", parse_mode="HTML")
    bot.fail_next("sendMessage", status=400, description="Bad Request: can't parse entities")
    with pytest.raises(services.BroadcastError, match="can't parse entities"):
        services.broadcast_preview(broadcast_id=broadcast.pk)
    with pytest.raises(services.BroadcastError, match="preview"):
        services.broadcast_start(broadcast_id=broadcast.pk)


def test_blocked_deleted_and_missing_chats_are_recorded_once_and_unsubscribed(
    bot: FakeTelegramServer,
) -> None:
    subscribe(3001, 3002, 3003, 3004)
    bot.block_chat(3001)  # "bot was blocked by the user"
    bot.block_chat(3002, "Forbidden: user is deactivated")
    bot.block_chat(3003, "Bad Request: chat not found")
    broadcast = start_now(make_broadcast("Hello"))
    run_to_the_end(broadcast.pk)

    statuses = dict(
        BroadcastRecipient.objects.filter(broadcast=broadcast).values_list("user_id", "status")
    )
    assert statuses == {
        3001: RecipientStatus.BLOCKED,
        3002: RecipientStatus.BLOCKED,
        3003: RecipientStatus.BLOCKED,
        3004: RecipientStatus.SENT,
    }
    for chat in (3001, 3002, 3003):  # one try each: no retry storm
        assert len([c for c in bot.calls_to("sendMessage") if c.params["chat_id"] == chat]) == 1
    assert set(
        Subscriber.objects.filter(status=SubscriberStatus.BLOCKED).values_list("user_id", flat=True)
    ) == {3001, 3002, 3003}
    p = progress(broadcast.pk)
    assert (p.sent, p.blocked, p.left, p.total) == (1, 3, 0, 4)


def test_a_429_storm_finishes_with_nothing_twice_and_nothing_skipped(
    bot: FakeTelegramServer, settings: Any
) -> None:
    """The bot's limiter thinks 40 a second are fine; the fake allows 15 and answers 429
    past that, and 5 more 429s come on top: the broadcast slows down and finishes."""
    settings.OUTGOING_LIMITS = True
    settings.OUTGOING_PER_SECOND = 40
    settings.OUTGOING_BULK_SHARE_PERCENT = 100
    limits = TelegramLimits(per_second=15, retry_after=1).install(bot)
    recipients = list(range(4001, 4061))
    subscribe(*recipients)
    broadcast = start_now(make_broadcast("Storm"))
    bot.fail_next("sendMessage", times=5, status=429, retry_after=1)
    run_to_the_end(broadcast.pk)

    assert limits.refused > 0  # the fake's limits did bite
    sent = deliveries(bot, "Storm")
    sent.pop(OWNER)
    assert sent == dict.fromkeys(recipients, 1)
    p = progress(broadcast.pk)
    assert (p.sent, p.left, p.failed, p.unknown) == (60, 0, 0, 0)
    refused = [c for c in bot.calls_to("sendMessage") if c.failed]
    # Every sender paused after each 429: a handful of refusals, not one per waiting send.
    assert len(refused) < 30


def test_telegram_down_ends_the_run_and_the_next_comes_later_without_a_storm(
    bot: FakeTelegramServer,
) -> None:
    subscribe(*range(5101, 5111))
    broadcast = start_now(make_broadcast("Down"))
    bot.fail_next("sendMessage", times=100, status=502, description="Bad Gateway")
    status = broadcast_run(broadcast_id=broadcast.pk)
    assert status == BroadcastStatus.SENDING  # handed over, not given up
    assert len([c for c in bot.calls_to("sendMessage") if c.failed]) == 1  # one try, no storm
    job = Job.objects.get(dedupe_key=f"broadcast:{broadcast.pk}", status="queued")
    assert job.next_attempt > timezone.now() + timedelta(seconds=1)
    assert progress(broadcast.pk).left == 10
    bot.reset()  # Telegram is back
    run_to_the_end(broadcast.pk)
    assert deliveries(bot, "Down") == dict.fromkeys(range(5101, 5111), 1)


def test_without_the_limiter_a_429_hands_the_run_over_after_retry_after(
    bot: FakeTelegramServer,
) -> None:
    subscribe(5151, 5152)
    broadcast = start_now(make_broadcast("Unpaced"))
    bot.fail_next("sendMessage", status=429, retry_after=3)
    assert broadcast_run(broadcast_id=broadcast.pk) == BroadcastStatus.SENDING
    job = Job.objects.get(dedupe_key=f"broadcast:{broadcast.pk}", status="queued")
    assert job.next_attempt >= timezone.now() + timedelta(seconds=2)
    run_to_the_end(broadcast.pk)
    assert deliveries(bot, "Unpaced") == {OWNER: 1, 5151: 1, 5152: 1}


def test_a_recipient_refused_five_times_is_failed_and_the_rest_go_on(
    bot: FakeTelegramServer,
) -> None:
    subscribe(5201, 5202)
    broadcast = start_now(make_broadcast("Stubborn"))
    bot.fail_next("sendMessage", times=5, status=500)
    run_to_the_end(broadcast.pk, timeout=120)
    statuses = dict(
        BroadcastRecipient.objects.filter(broadcast=broadcast).values_list("user_id", "status")
    )
    assert statuses == {5201: RecipientStatus.FAILED, 5202: RecipientStatus.SENT}
    assert len(bot.calls_to("sendMessage")) == 1 + 5 + 1  # the preview, 5 tries, 5202


def test_an_unanswered_send_is_unknown_and_never_sent_again(bot: FakeTelegramServer) -> None:
    subscribe(5001, 5002, 5003)
    broadcast = start_now(make_broadcast("Maybe"))
    bot.fail_next("sendMessage", drop_connection=True)  # 5001's answer is lost
    run_to_the_end(broadcast.pk)
    statuses = dict(
        BroadcastRecipient.objects.filter(broadcast=broadcast).values_list("user_id", "status")
    )
    assert statuses == {
        5001: RecipientStatus.UNKNOWN,
        5002: RecipientStatus.SENT,
        5003: RecipientStatus.SENT,
    }
    assert len([c for c in bot.calls_to("sendMessage") if c.params["chat_id"] == 5001]) == 1
    p = progress(broadcast.pk)
    assert p.sent + p.unknown == p.total == 3


def test_a_claim_left_by_a_dead_run_is_unknown_after_its_deadline(bot: FakeTelegramServer) -> None:
    subscribe(6001, 6002)
    broadcast = start_now(make_broadcast("Once"))
    broadcast_run(broadcast_id=broadcast.pk)  # sends both
    # As if a run had claimed 6003 and died before recording anything.
    Subscriber.objects.create(user_id=6003)
    BroadcastRecipient.objects.create(
        broadcast=broadcast,
        user_id=6003,
        status=RecipientStatus.SENDING,
        attempt_token="dead",
        attempt_deadline=timezone.now() - timedelta(seconds=1),
    )
    type(broadcast).objects.filter(pk=broadcast.pk).update(status=BroadcastStatus.SENDING)
    assert broadcast_run(broadcast_id=broadcast.pk) == BroadcastStatus.DONE
    assert BroadcastRecipient.objects.get(user_id=6003).status == RecipientStatus.UNKNOWN
    assert not [c for c in bot.calls_to("sendMessage") if c.params["chat_id"] == 6003]


def test_a_message_telegram_refuses_pauses_the_broadcast_instead_of_failing_everyone(
    bot: FakeTelegramServer,
) -> None:
    subscribe(*range(7001, 7011))
    broadcast = start_now(make_broadcast("Fine at preview"))
    bot.fail_next("sendMessage", status=400, description="Bad Request: message is too long")
    assert broadcast_run(broadcast_id=broadcast.pk) == BroadcastStatus.PAUSED
    broadcast.refresh_from_db()
    assert "message is too long" in broadcast.last_error
    assert progress(broadcast.pk).left == 10
    assert services.broadcast_resume(broadcast_id=broadcast.pk)
    run_to_the_end(broadcast.pk)
    assert deliveries(bot, "Fine at preview") == {OWNER: 1, **dict.fromkeys(range(7001, 7011), 1)}


def test_pause_resume_and_cancel(bot: FakeTelegramServer) -> None:
    subscribe(*range(8001, 8006))
    cancelled = start_now(make_broadcast("Cancelled"))
    assert services.broadcast_cancel(broadcast_id=cancelled.pk)
    run_to_the_end(cancelled.pk)
    assert deliveries(bot, "Cancelled") == {OWNER: 1}  # the preview only

    broadcast = start_now(make_broadcast("Later"))
    assert services.broadcast_pause(broadcast_id=broadcast.pk) is False  # not sending yet
    _begin(broadcast.pk)  # its job made the recipient list...
    assert services.broadcast_pause(broadcast_id=broadcast.pk)  # ...and was paused
    assert broadcast_run(broadcast_id=broadcast.pk) == BroadcastStatus.PAUSED
    assert deliveries(bot, "Later") == {OWNER: 1}
    assert progress(broadcast.pk).left == 5
    assert services.broadcast_resume(broadcast_id=broadcast.pk)
    run_to_the_end(broadcast.pk)
    assert deliveries(bot, "Later") == {OWNER: 1, **dict.fromkeys(range(8001, 8006), 1)}
    assert services.broadcast_cancel(broadcast_id=broadcast.pk) is False  # done: final
    assert services.broadcast_resume(broadcast_id=broadcast.pk) is False


def test_cancel_mid_way_marks_the_rest_cancelled_and_the_numbers_add_up(
    bot: FakeTelegramServer,
) -> None:
    subscribe(*range(9001, 9011))
    broadcast = start_now(make_broadcast("Half"))
    bot.delay_next("sendMessage", 0.2, times=3)

    def run() -> None:
        try:
            broadcast_run(broadcast_id=broadcast.pk)
        finally:
            connection.close()  # the thread's own connection

    runner = threading.Thread(target=run)
    runner.start()
    deadline = time.monotonic() + 10
    while progress(broadcast.pk).sent < 2:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    services.broadcast_cancel(broadcast_id=broadcast.pk)
    runner.join(timeout=20)
    p = progress(broadcast.pk)
    assert p.cancelled > 0 and p.left == 0
    assert p.sent + p.cancelled == p.total == 10
    sent = deliveries(bot, "Half")
    sent.pop(OWNER)
    assert len(sent) == p.sent and set(sent.values()) == {1}


def test_a_broadcast_at_a_time_waits_for_it(bot: FakeTelegramServer) -> None:
    subscribe(9501)
    broadcast = make_broadcast("Tomorrow")
    services.broadcast_preview(broadcast_id=broadcast.pk)
    later = timezone.now() + timedelta(days=1)
    services.broadcast_start(broadcast_id=broadcast.pk, send_at=later)
    assert broadcast_run(broadcast_id=broadcast.pk) == BroadcastStatus.SCHEDULED
    job = Job.objects.get(dedupe_key=f"broadcast:{broadcast.pk}")
    assert abs((job.next_attempt - later).total_seconds()) < 1
    assert deliveries(bot, "Tomorrow") == {OWNER: 1}
    other = make_broadcast("Far")
    services.broadcast_preview(broadcast_id=other.pk)
    with pytest.raises(services.BroadcastError, match="year"):
        services.broadcast_start(broadcast_id=other.pk, send_at=later + timedelta(days=400))


def test_answers_are_not_held_behind_a_broadcast(bot: FakeTelegramServer, settings: Any) -> None:
    """A broadcast sends at its share (here 10 of 20 a second); an answer meanwhile finds room
    in the overall window at once."""
    settings.OUTGOING_LIMITS = True
    settings.OUTGOING_PER_SECOND = 20
    settings.OUTGOING_BULK_SHARE_PERCENT = 50
    limiter = get_client().limiter
    assert limiter is not None
    stop = threading.Event()

    def bulk() -> None:
        with bulk_sends():
            n = 0
            while not stop.is_set():
                limiter.before_send("sendMessage", 20_000 + n)
                n += 1

    sender = threading.Thread(target=bulk)
    sender.start()
    try:
        time.sleep(1.2)  # the bulk share is full and stays full
        waits = [limiter.before_send("sendMessage", 30_000 + n) for n in range(5)]
    finally:
        stop.set()
        sender.join(timeout=5)
    assert max(waits) < 0.05, waits
