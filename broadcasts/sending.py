"""Sending a broadcast: every recipient once, at the outgoing limiter's pace, across crashes.

The pattern of posts (``content.publishing``) and the core's ``telegram_bot.delivery``, per
recipient row:

1. Wait for the send's slot in the outgoing limiter (bulk share) *before* the claim, so that
   nothing but one HTTP call lies between the claim and its recorded outcome.
2. Claim: ``pending -> sending`` with a fresh token and a deadline (the job's lease expiry,
   at most the client's send window), one ``UPDATE ... WHERE status = 'pending'`` whose row
   count says who won: two runs at once never send to one recipient twice.
3. ``send_once``: one call. Its outcome, fenced on the token, is exactly one of
   ``sent`` (with the message id), ``blocked`` (403: blocked, deleted account; the chat is
   gone; the subscriber is unsubscribed, nothing retried), ``pending`` again (Telegram refused
   retryably: 429, 5xx, or the request never left; the 429 paused the whole bot through the
   limiter, anything else ends the run and the next comes after a growing delay; after
   ``MAX_ATTEMPTS`` it is ``failed``), or ``unknown`` (it may have arrived:
   never sent again).
4. A recipient found ``sending`` after its deadline belongs to a run that died inside the
   window between the claim and the record: its outcome is ``unknown``, never sent again. The
   token is kept, so a slow run whose answer still arrives records ``sent``.

A run stops at the end of its slice (or its lease), when the broadcast is paused or
cancelled, or when Telegram refuses the message itself (bad formatting: the broadcast is
paused with the error, instead of failing every recipient), and hands the rest to the next
run of the broadcast's job. The broadcast is ``done`` when no recipient is left to send.
"""

from __future__ import annotations

import logging
import time
import uuid
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from broadcasts import jobs, services
from broadcasts.models import (
    Broadcast,
    BroadcastRecipient,
    BroadcastStatus,
    RecipientStatus,
)
from broadcasts.outgoing import Outgoing, outgoing
from broadcasts.selectors import segment
from telegram_bot.bot import get_client
from telegram_bot.client import SEND_WINDOW_SECONDS, bulk_sends, slot_taken
from telegram_bot.delivery import describe, send_once
from telegram_bot.errors import TelegramApiError, TelegramRateLimitError
from telegram_bot.jobs.models import Job, JobStatus
from telegram_bot.jobs.runner import JobRun

log = logging.getLogger(__name__)

SLICE_SECONDS = 30.0  # one run sends this long at most, then hands over
MIN_SEND_SECONDS = 1.0  # no send is started with less of the lease left
MAX_ATTEMPTS = 5  # retryable refusals of one recipient before it is failed
RETRY_BASE_SECONDS, RETRY_MAX_SECONDS = 2.0, 120.0  # after a 5xx or a network error
BATCH = 50  # pending recipients read at a time
STATUS_EVERY = 0.5  # seconds between reads of the broadcast's status (pause, cancel)
UNREACHABLE = ("user not found", "peer_id_invalid", "user is deactivated")
UNKNOWN_TEXT = "the send ended without Telegram's answer: it may or may not have arrived"


def broadcast_run(*, broadcast_id: int, run: JobRun | None = None) -> str:
    """One run of the broadcast's job; returns the broadcast's status after it."""
    started = time.monotonic()
    status = _begin(broadcast_id)
    if status != BroadcastStatus.SENDING:
        return status
    broadcast = Broadcast.objects.get(pk=broadcast_id)
    _judge_unfinished(broadcast_id)
    message = outgoing(broadcast)
    lease_end = _lease_end(run)
    client = get_client()
    checked = time.monotonic()
    with bulk_sends():
        while True:
            batch = list(
                BroadcastRecipient.objects.filter(
                    broadcast_id=broadcast_id, status=RecipientStatus.PENDING
                )
                .order_by("pk")
                .values_list("pk", "user_id")[:BATCH]
            )
            if not batch:
                return _finish_or_wait(broadcast_id)
            for recipient_id, user_id in batch:
                budget = _budget(started, lease_end)
                if budget < MIN_SEND_SECONDS:
                    return _hand_over(broadcast_id, timezone.now())
                if time.monotonic() - checked > STATUS_EVERY:
                    checked = time.monotonic()
                    status = _status(broadcast_id)
                    if status != BroadcastStatus.SENDING:
                        return status
                if client.limiter is not None:
                    try:
                        client.limiter.before_send(
                            message.method, user_id, max_wait=budget - MIN_SEND_SECONDS
                        )
                    except TelegramRateLimitError as exc:  # a pause longer than this run
                        later = timezone.now() + timedelta(seconds=exc.retry_after)
                        return _hand_over(broadcast_id, later)
                outcome = _send_one(broadcast_id, recipient_id, user_id, message, lease_end)
                if outcome is not None:
                    return outcome


# --- the steps --------------------------------------------------------------------------------
def _begin(broadcast_id: int) -> str:
    """A scheduled broadcast that is due: its recipients (the segment now) and ``sending``."""
    now = timezone.now()
    with transaction.atomic():
        broadcast = Broadcast.objects.select_for_update().filter(pk=broadcast_id).first()
        if broadcast is None:
            return BroadcastStatus.CANCELLED
        if broadcast.status != BroadcastStatus.SCHEDULED:
            return broadcast.status
        if broadcast.send_at is not None and broadcast.send_at > now + timedelta(seconds=2):
            jobs.send_job_set(broadcast_id, run_at=broadcast.send_at, kick=False)
            return broadcast.status
        user_ids = list(segment(broadcast).order_by("user_id").values_list("user_id", flat=True))
        BroadcastRecipient.objects.bulk_create(
            [BroadcastRecipient(broadcast_id=broadcast_id, user_id=uid) for uid in user_ids],
            ignore_conflicts=True,
            batch_size=1000,
        )
        broadcast.status, broadcast.started_at = BroadcastStatus.SENDING, now
        broadcast.recipients_total = len(user_ids)
        broadcast.save(update_fields=["status", "started_at", "recipients_total"])
    return BroadcastStatus.SENDING


def _send_one(
    broadcast_id: int,
    recipient_id: int,
    user_id: int,
    message: Outgoing,
    lease_end: datetime | None,
) -> str | None:
    """Claim, send, record one recipient; a status when the run must stop, else None."""
    now = timezone.now()
    deadline = now + timedelta(seconds=SEND_WINDOW_SECONDS)
    if lease_end is not None:
        deadline = min(deadline, lease_end)
    token = uuid.uuid4().hex
    claimed = BroadcastRecipient.objects.filter(
        pk=recipient_id, status=RecipientStatus.PENDING
    ).update(
        status=RecipientStatus.SENDING,
        attempt_token=token,
        attempt_deadline=deadline,
        attempts=F("attempts") + 1,
    )
    if not claimed:
        return None  # another run took it, or the broadcast was cancelled
    client = get_client()
    with slot_taken():
        return send_once(
            lambda: client.call(message.method, **message.to(user_id)),
            sent=lambda result: _sent(recipient_id, token, result),
            refused=lambda exc: _refused(broadcast_id, recipient_id, user_id, token, exc),
            unknown=lambda why, exc: _unknown(recipient_id, token, why),
        )


def _sent(recipient_id: int, token: str, result: Any) -> None:
    message_id = result.get("message_id") if isinstance(result, dict) else None
    BroadcastRecipient.objects.filter(
        pk=recipient_id,
        attempt_token=token,
        status__in=(RecipientStatus.SENDING, RecipientStatus.UNKNOWN),
    ).update(
        status=RecipientStatus.SENT,
        message_id=message_id,
        error="",
        attempt_deadline=None,
        finished_at=timezone.now(),
    )


def _refused(
    broadcast_id: int, recipient_id: int, user_id: int, token: str, exc: TelegramApiError
) -> str | None:
    error = describe(exc)[:500]
    mine = BroadcastRecipient.objects.filter(
        pk=recipient_id, attempt_token=token, status=RecipientStatus.SENDING
    )
    text = (exc.description or "").lower()
    if exc.chat_unreachable or any(marker in text for marker in UNREACHABLE):
        mine.update(status=RecipientStatus.BLOCKED, error=error, finished_at=timezone.now())
        services.subscriber_unreachable(user_id)
        return None
    if exc.retryable:
        # Telegram did not send it: the recipient is sent again later, up to MAX_ATTEMPTS. A
        # 429 has paused every sender through the limiter, so the run goes on at that pace;
        # anything else (Telegram down, the network) ends the run, and the next one comes
        # after a growing delay, not a storm of retries through every recipient.
        attempts = mine.values_list("attempts", flat=True).first() or 1
        mine.filter(attempts__gte=MAX_ATTEMPTS).update(
            status=RecipientStatus.FAILED, error=error, finished_at=timezone.now()
        )
        mine.update(status=RecipientStatus.PENDING, error=error, attempt_token="")
        if isinstance(exc, TelegramRateLimitError):
            if get_client().limiter is not None:
                return None  # the limiter's pause holds every send, this run's next one too
            delay = exc.retry_after
        else:
            delay = min(RETRY_MAX_SECONDS, RETRY_BASE_SECONDS * 2 ** (attempts - 1))
        return _hand_over(broadcast_id, timezone.now() + timedelta(seconds=delay))
    # Telegram refused the message itself (formatting, a photo it cannot use): every other
    # recipient would be refused too. The broadcast waits for the operator instead.
    mine.update(status=RecipientStatus.PENDING, error=error, attempt_token="")
    Broadcast.objects.filter(pk=broadcast_id, status=BroadcastStatus.SENDING).update(
        status=BroadcastStatus.PAUSED, last_error=error
    )
    log.warning("broadcast %s paused: Telegram refused the message: %s", broadcast_id, error)
    return BroadcastStatus.PAUSED


def _unknown(recipient_id: int, token: str, why: str) -> None:
    BroadcastRecipient.objects.filter(
        pk=recipient_id, attempt_token=token, status=RecipientStatus.SENDING
    ).update(
        status=RecipientStatus.UNKNOWN,
        error=f"{UNKNOWN_TEXT} ({why[:300]})",
        finished_at=timezone.now(),
    )


def _judge_unfinished(broadcast_id: int) -> int:
    """Recipients claimed by a run that died in its window: their outcome is unknown."""
    return BroadcastRecipient.objects.filter(
        broadcast_id=broadcast_id,
        status=RecipientStatus.SENDING,
        attempt_deadline__lt=timezone.now(),
    ).update(status=RecipientStatus.UNKNOWN, error=UNKNOWN_TEXT, finished_at=timezone.now())


def _finish_or_wait(broadcast_id: int) -> str:
    """No recipient left to claim: done, unless a send is in flight (another run's, or one
    that died and is judged once its deadline passed)."""
    _judge_unfinished(broadcast_id)
    in_flight = (
        BroadcastRecipient.objects.filter(broadcast_id=broadcast_id, status=RecipientStatus.SENDING)
        .order_by("attempt_deadline")
        .values_list("attempt_deadline", flat=True)
        .first()
    )
    if in_flight is not None:
        return _hand_over(broadcast_id, in_flight + timedelta(seconds=1))
    Broadcast.objects.filter(pk=broadcast_id, status=BroadcastStatus.SENDING).update(
        status=BroadcastStatus.DONE, finished_at=timezone.now()
    )
    return _status(broadcast_id)


def _hand_over(broadcast_id: int, run_at: datetime) -> str:
    with transaction.atomic():
        status = (
            Broadcast.objects.select_for_update()
            .filter(pk=broadcast_id)
            .values_list("status", flat=True)
            .first()
        )
        if status == BroadcastStatus.SENDING:
            jobs.send_job_set(broadcast_id, run_at=run_at)
    return status or BroadcastStatus.CANCELLED


def _status(broadcast_id: int) -> str:
    status = Broadcast.objects.filter(pk=broadcast_id).values_list("status", flat=True).first()
    return status or BroadcastStatus.CANCELLED


def _lease_end(run: JobRun | None) -> datetime | None:
    if run is None:
        return None
    return (
        Job.objects.filter(pk=run.job_id, status=JobStatus.RUNNING, lease_owner=run.owner)
        .values_list("lease_expires_at", flat=True)
        .first()
    ) or timezone.now()


def _budget(started: float, lease_end: datetime | None) -> float:
    """Seconds this run may still start sends in: its slice, and its lease."""
    left = SLICE_SECONDS - (time.monotonic() - started)
    if lease_end is not None:
        left = min(left, (lease_end - timezone.now()).total_seconds())
    return left
