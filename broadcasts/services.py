"""Writes of the broadcasts app: subscribers (from the update path) and a broadcast's life
(from the console). Sending is ``broadcasts.sending``."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from broadcasts import jobs
from broadcasts.models import (
    Broadcast,
    BroadcastRecipient,
    BroadcastStatus,
    ChatMembership,
    RecipientStatus,
    Subscriber,
    SubscriberStatus,
)
from broadcasts.outgoing import outgoing
from telegram_bot.bot import get_client
from telegram_bot.delivery import describe
from telegram_bot.errors import TelegramApiError

MAX_SCHEDULE_DAYS = 366


class BroadcastError(Exception):
    """An operator's request that cannot be done; the text says why, for the console."""


# --- subscribers ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Person:
    user_id: int
    first_name: str = ""
    username: str = ""
    language: str = ""


def subscriber_start(person: Person) -> Subscriber:
    """``/start`` in private: subscribed (again), whatever they were; idempotent. One
    statement (``INSERT ... ON CONFLICT DO UPDATE``): the first /start's ``joined_at`` stays."""
    now = timezone.now()
    subscriber = Subscriber(
        user_id=person.user_id,
        first_name=person.first_name[:128],
        username=person.username[:64],
        language=person.language[:16].lower(),
        status=SubscriberStatus.ACTIVE,
        joined_at=now,
        changed_at=now,
    )
    update = ["first_name", "username", "status", "changed_at"]
    if person.language:
        update.append("language")
    Subscriber.objects.bulk_create(
        [subscriber], update_conflicts=True, unique_fields=["user_id"], update_fields=update
    )
    return subscriber


def subscriber_stop(user_id: int) -> bool:
    """``/stop``: no more broadcasts until ``/start``. True if they were subscribed."""
    return bool(
        Subscriber.objects.filter(user_id=user_id, status=SubscriberStatus.ACTIVE).update(
            status=SubscriberStatus.STOPPED, changed_at=timezone.now()
        )
    )


def subscriber_unreachable(user_id: int) -> None:
    """The user blocked the bot, deleted the account, or the chat is gone: unsubscribed."""
    Subscriber.objects.filter(user_id=user_id).exclude(status=SubscriberStatus.BLOCKED).update(
        status=SubscriberStatus.BLOCKED, changed_at=timezone.now()
    )


def membership_set(*, chat_id: int, user_id: int, is_member: bool) -> None:
    ChatMembership.objects.update_or_create(
        chat_id=chat_id,
        user_id=user_id,
        defaults={"is_member": is_member, "changed_at": timezone.now()},
    )


# --- a broadcast's life ---------------------------------------------------------------------
def fingerprint(broadcast: Broadcast) -> str:
    """What a preview showed: the content, not the segment or the time."""
    content = [
        broadcast.text,
        broadcast.parse_mode,
        broadcast.photo,
        broadcast.media_kind,
        broadcast.buttons,
        broadcast.disable_notification,
    ]
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()[:64]


def broadcast_preview(*, broadcast_id: int) -> int:
    """Send the broadcast to its author (``preview_chat_id``, else the owner), now, unpaced by
    the bulk share (it is an answer to the author); return the chat it went to. Telegram's
    refusal (bad formatting, a photo it cannot fetch) is raised as ``BroadcastError``."""
    broadcast = Broadcast.objects.get(pk=broadcast_id)
    chat_id = broadcast.preview_chat_id or settings.OWNER_TELEGRAM_ID
    if not chat_id:
        raise BroadcastError(_("Set 'preview to' (your Telegram user id) first."))
    message = outgoing(broadcast, chat_id)
    try:
        get_client().call(message.method, **message.params)
    except TelegramApiError as exc:
        Broadcast.objects.filter(pk=broadcast_id).update(
            previewed="", last_error=describe(exc)[:500]
        )
        raise BroadcastError(
            _("Telegram refused the preview: %(error)s") % {"error": exc.description or exc}
        ) from exc
    Broadcast.objects.filter(pk=broadcast_id).update(
        previewed=fingerprint(broadcast), last_error=""
    )
    return int(chat_id)


def broadcast_start(*, broadcast_id: int, send_at: datetime | None = None) -> Broadcast:
    """Schedule a draft: now (``send_at`` None) or at ``send_at``. Its current content must
    have been previewed."""
    now = timezone.now()
    if send_at is not None and send_at > now + timedelta(days=MAX_SCHEDULE_DAYS):
        raise BroadcastError(_("A broadcast is scheduled at most a year ahead."))
    with transaction.atomic():
        broadcast = Broadcast.objects.select_for_update().get(pk=broadcast_id)
        if broadcast.status != BroadcastStatus.DRAFT:
            raise BroadcastError(
                _("Broadcast #%(id)s is %(status)s: only a draft can be started.")
                % {"id": broadcast.pk, "status": broadcast.get_status_display()}
            )
        if broadcast.previewed != fingerprint(broadcast):
            raise BroadcastError(
                _(
                    "Send a preview of broadcast #%(id)s to yourself first "
                    "(action 'Send a preview to me')."
                )
                % {"id": broadcast.pk}
            )
        run_at = max(send_at or now, now)
        broadcast.status, broadcast.send_at = BroadcastStatus.SCHEDULED, run_at
        broadcast.save(update_fields=["status", "send_at"])
        jobs.send_job_set(broadcast.pk, run_at=run_at)
    return broadcast


def broadcast_pause(*, broadcast_id: int) -> bool:
    """Stop sending after the send in flight; True if it was sending."""
    return bool(
        Broadcast.objects.filter(pk=broadcast_id, status=BroadcastStatus.SENDING).update(
            status=BroadcastStatus.PAUSED
        )
    )


def broadcast_resume(*, broadcast_id: int) -> bool:
    with transaction.atomic():
        resumed = Broadcast.objects.filter(pk=broadcast_id, status=BroadcastStatus.PAUSED).update(
            status=BroadcastStatus.SENDING, last_error=""
        )
        if resumed:
            jobs.send_job_set(broadcast_id, run_at=timezone.now())
    return bool(resumed)


def broadcast_cancel(*, broadcast_id: int) -> bool:
    """No more sends: the recipients still to send are marked cancelled (one being sent right
    now keeps its claim and records its outcome)."""
    now = timezone.now()
    with transaction.atomic():
        cancelled = (
            Broadcast.objects.filter(pk=broadcast_id)
            .exclude(status__in=(BroadcastStatus.DONE, BroadcastStatus.CANCELLED))
            .update(status=BroadcastStatus.CANCELLED, finished_at=now)
        )
        if cancelled:
            BroadcastRecipient.objects.filter(
                broadcast_id=broadcast_id, status=RecipientStatus.PENDING
            ).update(status=RecipientStatus.CANCELLED, finished_at=now)
            jobs.send_job_cancel(broadcast_id)
    return bool(cancelled)
