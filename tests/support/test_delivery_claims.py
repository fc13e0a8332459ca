"""The same answer never reaches the user twice: a send is claimed before it goes out, so the
support.deliver job, the admin site's Retry button and a re-delivered update never send one
entry at the same time; and a send whose outcome is unknown (a read timeout, a dropped
connection, a proxy's gateway error, an attempt that died) is never repeated automatically:
it is marked uncertain, the admin is told and decides with "Retry delivery"."""

from __future__ import annotations

import socket
import threading
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import httpx
import pytest
from django.db import connections, transaction
from django.test import Client
from django.utils import timezone

from support import delivery, services
from support.models import Ticket, TicketMessage
from support.services import Author, Origin
from support.validation import Content
from telegram_bot.client import TelegramClient, telegram_error
from telegram_bot.errors import TelegramApiError
from telegram_bot.jobs.models import Job, JobStatus
from telegram_bot.jobs.runner import run_due
from telegram_bot.pipeline import idempotency
from telegram_bot.state import KVStore
from tests.builders import next_update_id
from tests.conftest import OWNER_ID
from tests.fakes.telegram import FakeTelegramServer
from tests.locks import wait_until_waiting_for_a_lock
from tests.support.helpers import USER, button, last_message_id, message, reply_to, texts

ANSWER_TEXT = "Try turning it off and on."
ANSWER = f"Support · ticket #1\n\n{ANSWER_TEXT}"
LIST = "/admin/support/ticket/"


@pytest.fixture
def fast_retries(settings: Any) -> None:
    settings.JOB_RETRY_BASE_DELAY = 0.01
    settings.JOB_RETRY_MAX_DELAY = 0.02
    settings.JOB_RETRY_JITTER = 0


@pytest.fixture
def short_read_timeout(
    bot: FakeTelegramServer, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The support desk's client gives up reading after 0.3 s (the default is 35 s)."""
    client = TelegramClient(
        settings.TELEGRAM_BOT_TOKEN,
        bot.base_url,
        timeout=httpx.Timeout(connect=2.0, read=0.3, write=2.0, pool=2.0),
    )
    monkeypatch.setattr(delivery, "get_client", lambda: client)


def make_jobs_due() -> None:
    Job.objects.filter(status=JobStatus.QUEUED).update(next_attempt=timezone.now())


def delivered_copies(bot: FakeTelegramServer) -> int:
    """How many copies of the answer Telegram accepted for the user."""
    return texts(bot, USER).count(ANSWER)


def answer_from_telegram(
    bot: FakeTelegramServer, post_update: Any, fault: Callable[[], None]
) -> dict[str, Any]:
    """Open ticket #1 and answer it by replying to its notification; ``fault`` prepares the
    fake for the answer's sendMessage (the next one)."""
    post_update(message("/support it is broken"))
    notice = last_message_id(bot, OWNER_ID, "#1")
    fault()
    update = reply_to(notice, ANSWER_TEXT, user_id=OWNER_ID)
    assert post_update(update)["X-Update-Outcome"] == "processed"
    return update


def site_ticket() -> Ticket:
    """Ticket #1, opened and confirmed (built directly, without Telegram traffic)."""
    opened, _ = services.ticket_open(
        bot_id=123456789,
        user_id=USER,
        chat_id=USER,
        author=Author(name="Test", telegram_id=USER),
        origin=Origin(update_id=next_update_id(), chat_id=USER, message_id=1),
        content=Content(kind="text", text="it is broken"),
    )
    TicketMessage.objects.filter(pk=opened.pk).update(
        user_notified_at=timezone.now(), admins_notified_at=timezone.now()
    )
    return Ticket.objects.get(pk=opened.ticket_id)


def site_answer() -> TicketMessage:
    """Ticket #1 and an answer from the admin site, recorded but not sent yet."""
    entry, _ = services.ticket_reply(
        ticket_id=site_ticket().pk,
        author=Author(name="admin"),
        origin=Origin(form_token=uuid.uuid4()),
        content=Content(kind="text", text=ANSWER_TEXT),
    )
    return TicketMessage.objects.select_related("ticket").get(pk=entry.pk)


# --- one sender at a time ----------------------------------------------------------------------
def run_together(*actions: Callable[[], Any]) -> list[Any]:
    results: list[Any] = []
    errors: list[BaseException] = []
    start = threading.Barrier(len(actions))

    def run(action: Callable[[], Any]) -> None:
        try:
            start.wait()
            results.append(action())
        except BaseException as exc:  # reported below, not lost in the thread
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(action,)) for action in actions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors
    return results


def retry_button(entry_id: int) -> Callable[[], Any]:
    def press() -> Any:
        fresh = TicketMessage.objects.select_related("ticket").get(pk=entry_id)
        return delivery.retry(fresh)

    return press


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("rival", ["job", "retry button"])
def test_the_retry_button_and_a_concurrent_sender_deliver_the_answer_once(
    bot: FakeTelegramServer, fast_retries: None, rival: str
) -> None:
    entry = site_answer()
    bot.fail_next("sendMessage", status=500)  # a transient failure: the job is queued
    assert delivery.deliver(entry).retrying
    assert Job.objects.get(kind="support.deliver").status == JobStatus.QUEUED
    assert delivered_copies(bot) == 0
    make_jobs_due()
    bot.delay_next("sendMessage", 0.5, times=2)  # whoever sends is slow: the other one overlaps
    other = (lambda: run_due("test-worker")) if rival == "job" else retry_button(entry.pk)
    run_together(retry_button(entry.pk), other)
    assert delivered_copies(bot) == 1
    entry.refresh_from_db()
    assert entry.delivery_state == "delivered"
    # Whatever job is left finds it delivered and sends nothing.
    make_jobs_due()
    run_due("test-worker")
    assert delivered_copies(bot) == 1


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_deliveries_of_a_new_entry_send_it_once(bot: FakeTelegramServer) -> None:
    entry = site_answer()
    bot.delay_next("sendMessage", 0.5, times=2)

    def deliver() -> delivery.Delivery:
        return delivery.deliver(TicketMessage.objects.select_related("ticket").get(pk=entry.pk))

    results = run_together(deliver, deliver)
    assert delivered_copies(bot) == 1
    assert sorted((r.delivered is True, r.in_progress) for r in results) == [
        (False, True),
        (True, False),
    ]


@pytest.mark.django_db(transaction=True)
def test_a_retry_that_waited_for_a_claim_being_committed_does_not_undo_the_claim(
    bot: FakeTelegramServer,
) -> None:
    """Two Retry presses: the first one's claim holds the row when the second one's reset reads
    it. The reset must see the claim once it is committed (a reset written as ``UPDATE ...
    WHERE id IN (SELECT ...)`` judged the row by its old version on PostgreSQL, dropped the
    claim, and the second press sent the answer again: CI saw it once)."""
    entry = site_answer()
    TicketMessage.objects.filter(pk=entry.pk).update(delivery_error="refused" + delivery.RETRYING)
    delivery.entry_delivery_retry(entry=entry)  # the first press's reset
    claimed, commit = threading.Event(), threading.Event()
    tokens: list[uuid.UUID | None] = []

    def first_press_claims() -> None:
        try:
            with transaction.atomic():
                tokens.append(
                    delivery.entry_delivery_claim(
                        entry_id=entry.pk,
                        deadline=timezone.now() + timedelta(seconds=60),
                        after_failure=False,
                    )
                )
                claimed.set()
                commit.wait(30)
        finally:
            connections.close_all()

    def second_press_resets() -> None:
        try:
            delivery.entry_delivery_retry(entry=entry)
        finally:
            connections.close_all()

    claimer = threading.Thread(target=first_press_claims)
    claimer.start()
    assert claimed.wait(30)
    resetter = threading.Thread(target=second_press_resets)
    resetter.start()
    wait_until_waiting_for_a_lock(resetter, "the Retry")
    commit.set()
    claimer.join(30)
    resetter.join(30)
    assert tokens and tokens[0] is not None
    row = TicketMessage.objects.get(pk=entry.pk)
    assert row.delivery_attempt_token == tokens[0]  # the claim stands
    # So the second press finds the answer being sent, and sends nothing.
    result = delivery.deliver(TicketMessage.objects.select_related("ticket").get(pk=entry.pk))
    assert result.in_progress and delivered_copies(bot) == 0


def test_an_entry_being_sent_is_not_sent_by_another_caller_and_is_checked_after_its_deadline(
    bot: FakeTelegramServer, fast_retries: None
) -> None:
    entry = site_answer()
    token = delivery.entry_delivery_claim(
        entry_id=entry.pk, deadline=timezone.now() + timedelta(seconds=60), after_failure=False
    )
    assert token is not None
    assert TicketMessage.objects.get(pk=entry.pk).delivery_state == "sending"
    result = delivery.deliver(entry)
    assert (result.delivered, result.in_progress) == (None, True)
    assert delivery.report(entry.ticket, result) == (
        "The message to the user of ticket #1 is being sent right now."
    )
    assert delivered_copies(bot) == 0
    job = Job.objects.get(kind="support.deliver")
    assert job.next_attempt > timezone.now() + timedelta(seconds=50)
    # The job comes back while that attempt is still in flight: it waits, sending nothing.
    make_jobs_due()
    assert run_due("test-worker") == 1
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED and "DeliveryInProgressError" in job.last_error
    assert delivered_copies(bot) == 0
    # That attempt never came back (its process died): the job marks it uncertain, tells the
    # admins, and does not send it.
    TicketMessage.objects.filter(pk=entry.pk).update(
        delivery_attempt_deadline=timezone.now() - timedelta(seconds=1)
    )
    make_jobs_due()
    assert run_due("test-worker") == 1
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED
    entry.refresh_from_db()
    assert entry.delivery_state == "uncertain"
    assert texts(bot, OWNER_ID)[-1].startswith(
        "Ticket #1: the answer to the user may or may not have arrived"
    )
    assert delivered_copies(bot) == 0


# --- outcome unknown: never resent automatically -----------------------------------------------
def test_a_timed_out_answer_that_reached_telegram_is_not_sent_again_automatically(
    bot: FakeTelegramServer,
    post_update: Any,
    memory_store: KVStore,
    short_read_timeout: None,
    fast_retries: None,
) -> None:
    update = answer_from_telegram(bot, post_update, lambda: bot.delay_next("sendMessage", 1.0))
    assert delivered_copies(bot) == 1  # Telegram took it; we never heard back
    entry = TicketMessage.objects.get(sender="admin")
    assert entry.delivery_state == "uncertain" and entry.user_notified_at is None
    assert "timed out" in entry.delivery_error
    assert texts(bot, OWNER_ID)[-1].startswith(
        "Delivery to the user of ticket #1 is uncertain: Telegram sendMessage failed: timed out"
    )
    assert "Retry delivery" in texts(bot, OWNER_ID)[-1]
    assert not Job.objects.filter(kind="support.deliver").exists()
    # Neither a re-delivered update nor any job sends it again.
    idempotency.forget(memory_store, update["update_id"])
    post_update(update)
    make_jobs_due()
    run_due("test-worker")
    assert delivered_copies(bot) == 1
    assert TicketMessage.objects.get(sender="admin").delivery_state == "uncertain"


def test_a_retry_job_that_times_out_is_not_retried_and_the_admins_are_told(
    bot: FakeTelegramServer, post_update: Any, short_read_timeout: None, fast_retries: None
) -> None:
    answer_from_telegram(bot, post_update, lambda: bot.fail_next("sendMessage", status=500))
    assert delivered_copies(bot) == 0
    bot.delay_next("sendMessage", 1.0)
    make_jobs_due()
    assert run_due("test-worker") == 1
    assert delivered_copies(bot) == 1
    job = Job.objects.get(kind="support.deliver")
    assert job.status == JobStatus.SUCCEEDED  # settled: not retried
    entry = TicketMessage.objects.get(sender="admin")
    assert entry.delivery_state == "uncertain"
    assert texts(bot, OWNER_ID)[-1].startswith(
        "Ticket #1: the answer to the user may or may not have arrived"
    )
    make_jobs_due()
    assert run_due("test-worker") == 0
    assert delivered_copies(bot) == 1


@pytest.mark.parametrize(
    "fault",
    [
        {"status": 504, "raw_body": b"<html>504 Gateway Time-out</html>"},
        {"status": 502, "raw_body": b"<html>502 Bad Gateway</html>"},
        {"status": 500, "drop_connection": True},
    ],
    ids=["proxy-504", "proxy-502", "dropped-connection"],
)
def test_an_answer_without_a_bot_api_answer_is_uncertain_and_not_retried(
    bot: FakeTelegramServer, post_update: Any, fast_retries: None, fault: dict[str, Any]
) -> None:
    answer_from_telegram(bot, post_update, lambda: bot.fail_next("sendMessage", **fault))
    entry = TicketMessage.objects.get(sender="admin")
    assert entry.delivery_state == "uncertain"
    assert "is uncertain" in texts(bot, OWNER_ID)[-1]
    assert not Job.objects.filter(kind="support.deliver").exists()


def test_an_answer_refused_before_it_left_is_retried_and_arrives_once(
    bot: FakeTelegramServer,
    post_update: Any,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
    fast_retries: None,
) -> None:
    with socket.socket() as probe:  # a local port nobody listens on: connection refused
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    refused = TelegramClient(settings.TELEGRAM_BOT_TOKEN, f"http://127.0.0.1:{port}")
    answer_from_telegram(
        bot, post_update, lambda: monkeypatch.setattr(delivery, "get_client", lambda: refused)
    )
    entry = TicketMessage.objects.get(sender="admin")
    assert entry.delivery_state == "not delivered" and "ConnectError" in entry.delivery_error
    assert texts(bot, OWNER_ID)[-1].endswith("It is retried automatically.")
    monkeypatch.undo()
    make_jobs_due()
    assert run_due("test-worker") == 1
    assert delivered_copies(bot) == 1
    assert TicketMessage.objects.get(sender="admin").delivery_state == "delivered"


def _mapped(**kwargs: Any) -> TelegramApiError:
    """An error as the client's single mapping function makes it."""
    return telegram_error("sendMessage", **kwargs)


@pytest.mark.parametrize(
    ("error", "reached"),
    [
        (_mapped(cause=httpx.ReadTimeout("timed out")), None),
        (_mapped(cause=httpx.RemoteProtocolError("disconnected")), None),
        (_mapped(cause=httpx.WriteTimeout("x")), None),
        (_mapped(status=504), None),
        (_mapped(status=502), None),
        (_mapped(cause=httpx.ConnectTimeout("x")), False),
        (_mapped(cause=httpx.ConnectError("x")), False),
        (_mapped(cause=httpx.PoolTimeout("x")), False),
        (_mapped(status=502, payload={"ok": False, "error_code": 502, "description": "Bad"}), True),
        (_mapped(status=500, payload={"ok": False, "error_code": 500, "description": "x"}), True),
        (
            _mapped(
                status=429,
                payload={
                    "ok": False,
                    "error_code": 429,
                    "description": "Too Many",
                    "parameters": {"retry_after": 3},
                },
            ),
            True,
        ),
        (
            _mapped(status=403, payload={"ok": False, "error_code": 403, "description": "blocked"}),
            True,
        ),
    ],
)
def test_which_failures_may_have_reached_the_user(
    error: TelegramApiError, reached: bool | None
) -> None:
    assert error.reached is reached  # what every sender reads (telegram_bot.delivery)


# --- the admin decides ---------------------------------------------------------------------------
def test_the_admin_site_shows_an_uncertain_answer_and_its_retry_sends_it_again(
    bot: FakeTelegramServer, admin_client: Client, short_read_timeout: None
) -> None:
    ticket = site_ticket()
    bot.delay_next("sendMessage", 1.0)
    response = admin_client.post(
        f"{LIST}{ticket.pk}/reply/",
        {"text": ANSWER_TEXT, "form_token": str(uuid.uuid4())},
        follow=True,
    )
    page = response.content.decode()
    assert "Delivery uncertain: Telegram sendMessage failed: timed out" in page
    entry = TicketMessage.objects.get(sender="admin")
    page = admin_client.get(f"{LIST}{ticket.pk}/change/").content.decode()
    assert "to the user: uncertain" in page and "Retry delivery" in page
    assert delivered_copies(bot) == 1
    # The admin checked with the user: it did not show up. Retry sends it again, once.
    response = admin_client.post(f"{LIST}{ticket.pk}/entries/{entry.pk}/retry/", follow=True)
    assert "Delivered to the user." in response.content.decode()
    assert delivered_copies(bot) == 2
    entry.refresh_from_db()
    assert entry.delivery_state == "delivered" and entry.delivery_error == ""
    response = admin_client.post(f"{LIST}{ticket.pk}/entries/{entry.pk}/retry/", follow=True)
    assert "This message was delivered already." in response.content.decode()
    assert delivered_copies(bot) == 2


def test_an_attempt_that_died_shows_as_uncertain_in_the_admin_site(
    bot: FakeTelegramServer, admin_client: Client
) -> None:
    entry = site_answer()
    delivery.entry_delivery_claim(
        entry_id=entry.pk, deadline=timezone.now() - timedelta(seconds=1), after_failure=False
    )
    page = admin_client.get(f"{LIST}{entry.ticket_id}/change/").content.decode()
    assert "to the user: uncertain" in page and "Retry delivery" in page
    entry.refresh_from_db()
    assert entry.delivery_uncertain and "did not finish" in entry.delivery_error
    assert delivered_copies(bot) == 0
    response = admin_client.post(f"{LIST}{entry.ticket_id}/entries/{entry.pk}/retry/", follow=True)
    assert "Delivered to the user." in response.content.decode()
    assert delivered_copies(bot) == 1


def test_an_uncertain_resolve_notice_is_reported_as_such(
    bot: FakeTelegramServer, post_update: Any, short_read_timeout: None
) -> None:
    post_update(message("/support it is broken"))
    ticket = Ticket.objects.get()
    bot.delay_next("sendMessage", 1.0)
    post_update(button(f"sup:resolve:{ticket.pk}", user_id=OWNER_ID))
    alert = bot.calls_to("answerCallbackQuery")[-1].params
    assert alert["text"].startswith("Ticket #1 resolved. Whether the user was told is uncertain")
    assert len(alert["text"]) <= 200
    assert TicketMessage.objects.get(event="resolved").delivery_state == "uncertain"


def test_a_kv_store_failing_before_the_send_is_not_taken_for_may_have_arrived(
    bot: FakeTelegramServer, post_update: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user's language is read from the KV store. Read inside the send, a store that
    failed there made the answer "may or may not have arrived", never retried, though nothing
    had left; now it is read before, and a store that fails gives the default language: the
    answer is sent, once."""
    from telegram_bot.errors import StateUnavailableError
    from tests.faults import fail_once_in

    post_update(message("/support it is broken"))
    notice = last_message_id(bot, OWNER_ID, "#1")
    fail_once_in(
        monkeypatch, delivery, "recipient_language", StateUnavailableError("redis went away")
    )
    update = reply_to(notice, ANSWER_TEXT, user_id=OWNER_ID)
    assert post_update(update)["X-Update-Outcome"] == "processed"
    entry = TicketMessage.objects.get(sender="admin")
    assert entry.delivery_state == "delivered" and not entry.delivery_uncertain
    assert delivered_copies(bot) == 1
    assert texts(bot, OWNER_ID)[-1] == "Sent to the user of ticket #1."


def test_retry_on_an_erased_users_ticket_says_nothing_can_be_sent(
    bot: FakeTelegramServer, admin_client: Client
) -> None:
    """An answer that failed, then its user erased: the retry sent nothing and the page said
    "Delivered to the user." (and the audit log recorded it done). Now there is no Retry
    button, and a retry posted anyway says why nothing is sent."""
    from telegram_bot.audit import Actor
    from telegram_bot.privacy import erase_user

    ticket = site_ticket()
    bot.fail_next("sendMessage", status=403, description="Forbidden: bot was blocked by the user")
    admin_client.post(
        f"{LIST}{ticket.pk}/reply/", {"text": ANSWER_TEXT, "form_token": str(uuid.uuid4())}
    )
    entry = TicketMessage.objects.get(sender="admin")
    assert "Retry delivery" in admin_client.get(f"{LIST}{ticket.pk}/change/").content.decode()
    erase_user(USER, actor=Actor(None, "test"), source="admin")
    assert "Retry delivery" not in admin_client.get(f"{LIST}{ticket.pk}/change/").content.decode()
    page = admin_client.post(f"{LIST}{ticket.pk}/entries/{entry.pk}/retry/", follow=True)
    text = page.content.decode()
    assert "erased: nothing can be sent" in text and "Delivered to the user." not in text
    assert delivered_copies(bot) == 0


def test_a_retry_that_sent_nothing_does_not_say_delivered(
    bot: FakeTelegramServer, admin_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another attempt had the entry and gave it up (Delivery(None), nothing sent by this
    one): not "Delivered to the user."."""
    ticket = site_ticket()
    bot.fail_next("sendMessage", status=403, description="Forbidden: bot was blocked by the user")
    admin_client.post(
        f"{LIST}{ticket.pk}/reply/", {"text": ANSWER_TEXT, "form_token": str(uuid.uuid4())}
    )
    entry = TicketMessage.objects.get(sender="admin")
    monkeypatch.setattr(delivery, "retry", lambda entry: delivery.Delivery(None))
    page = admin_client.post(f"{LIST}{ticket.pk}/entries/{entry.pk}/retry/", follow=True)
    text = page.content.decode()
    assert "Nothing was sent" in text and "Delivered to the user." not in text
