"""Messages to every admin, each delivery isolated from the others, none lost to a blip.

One admin who blocked the bot (or any failure sending to one admin) never stops the others.
Each notice is one ``send_once`` per admin (``telegram_bot.delivery``):

- a transient refusal (429, 5xx, a request that never left this machine) is not a failure
  yet: a ``core.admin_notice`` job sends that admin's notice again on the job retry policy,
  and only when the policy gives up is it recorded in ``DeliveryFailure``;
- a permanent refusal is recorded, and a chat that will keep refusing is marked
  ``BlockedChat`` and skipped until that user writes to the bot again;
- an unknown outcome (it may have arrived) is recorded, and not sent again.

A feature that links its notices (support maps them to tickets, join requests edit them later)
passes ``on_sent``: a job queued with the admin's chat and message id when a retried notice
finally arrives, so the late copy is linked like the others.

A notice given as a function (``text=lambda: _("...")``) is written for each admin in that
admin's language (``telegram_bot.languages``), not in the language of the update that caused
it; its buttons too, when their labels are lazy translations.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.db import connection
from django.utils import translation

from telegram_bot import languages
from telegram_bot.admins import admin_ids
from telegram_bot.bot import get_client
from telegram_bot.client import TelegramClient, clip
from telegram_bot.delivery import send_once
from telegram_bot.errors import TelegramApiError
from telegram_bot.jobs.registry import job_handlers
from telegram_bot.jobs.services import job_enqueue, job_retry_later
from telegram_bot.models import BlockedChat, DeliveryFailure
from telegram_bot.redaction import redact
from telegram_bot.state import get_store

if TYPE_CHECKING:
    from telegram_bot.jobs.runner import JobRun

log = logging.getLogger(__name__)

ADMIN_NOTICE_JOB = "core.admin_notice"
UNKNOWN_PREFIX = "outcome unknown, not sent again: "


@dataclass(frozen=True)
class FollowUp:
    """A job to queue once a retried notice arrived; its payload gets ``chat_id`` and
    ``message_id`` added. Everything must be JSON (it is stored in the retry job)."""

    kind: str
    payload: dict[str, Any]

    def __post_init__(self) -> None:
        # Checked when the notice is sent, not when a late copy arrives and it is too late.
        if self.kind not in job_handlers():
            raise ValueError(f"unknown job kind {self.kind!r}")


@dataclass
class NotifyReport:
    sent: dict[int, dict[str, Any]] = field(default_factory=dict)
    # Not delivered by this call (description); those in ``retrying`` are sent again by a job.
    failed: dict[int, str] = field(default_factory=dict)
    skipped: list[int] = field(default_factory=list)
    retrying: list[int] = field(default_factory=list)
    # ``claim`` said another run has this notice: nothing was sent.
    claimed_elsewhere: bool = False


def notify_admins(
    text: str | Callable[[], str],
    *,
    purpose: str,
    reply_markup: dict[str, Any] | None = None,
    client: TelegramClient | None = None,
    on_sent: FollowUp | None = None,
    claim: Callable[[], bool] | None = None,
    recipients: Iterable[int] | None = None,
) -> NotifyReport:
    """Send ``text`` to every admin (or to ``recipients``: a feature's own admins, such as a
    chat's admins who take its reports); return who got it, who did not (and whose notice a
    job retries), and who was skipped. ``claim`` (the caller's send claim) is called once,
    after the admins are read and before the first send: False sends nothing (another run has
    the notice). Past it, a failure for one admin stops no other, so this raises only
    before."""
    client = client or get_client()
    report = NotifyReport()
    recipients = admin_ids() if recipients is None else list(dict.fromkeys(recipients))
    blocked = set(
        BlockedChat.objects.filter(chat_id__in=recipients).values_list("chat_id", flat=True)
    )
    if claim is not None and not claim():
        report.claimed_elsewhere = True
        return report
    for admin_id in recipients:
        if admin_id in blocked:
            report.skipped.append(admin_id)
            continue
        try:
            with translation.override(_admin_language(admin_id)):
                body = clip(text() if callable(text) else text)
                markup = languages.plain(reply_markup)
            _Notice(admin_id, body, purpose, markup, on_sent).deliver(client, report)
        except Exception:  # a bug, or the database gone, for one admin stops no other
            log.exception("notifying admin %s failed (%s)", admin_id, purpose)
    return report


def _admin_language(admin_id: int) -> str:
    return languages.recipient_language(get_store(), user_id=admin_id)


@dataclass(frozen=True)
class _Notice:
    chat_id: int
    text: str
    purpose: str
    reply_markup: dict[str, Any] | None
    on_sent: FollowUp | None

    def send(self, client: TelegramClient) -> dict[str, Any]:
        return client.send_message(
            chat_id=self.chat_id, text=self.text, reply_markup=self.reply_markup
        )

    def deliver(self, client: TelegramClient, report: NotifyReport) -> None:
        """Send it once; record the outcome in ``report`` (and a retry job, or a failure)."""

        def sent(message: dict[str, Any]) -> None:
            report.sent[self.chat_id] = message

        def refused(exc: TelegramApiError) -> None:
            if not exc.retryable:
                report.failed[self.chat_id] = delivery_failed(self.chat_id, self.purpose, exc)
                return
            report.failed[self.chat_id] = redact(str(exc))[:500]
            job_retry_later(
                ADMIN_NOTICE_JOB, self.payload(), dedupe_key=self.dedupe_key(), error=exc
            )
            report.retrying.append(self.chat_id)
            log.info(
                "notice to admin %s (%s) retried by a job: %s", self.chat_id, self.purpose, exc
            )

        def unknown(why: str, exc: BaseException) -> None:
            report.failed[self.chat_id] = delivery_failed(
                self.chat_id, self.purpose, exc, outcome_unknown=True
            )

        send_once(lambda: self.send(client), sent=sent, refused=refused, unknown=unknown)

    def payload(self) -> dict[str, Any]:
        follow = None if self.on_sent is None else [self.on_sent.kind, self.on_sent.payload]
        return {
            "chat_id": self.chat_id,
            "text": self.text,
            "purpose": self.purpose,
            "reply_markup": self.reply_markup,
            "on_sent": follow,
        }

    def dedupe_key(self) -> str:
        """One pending retry per admin and notice: the same notice failing again (a caller
        that runs twice) joins it instead of queueing a second copy. The follow-up is part of
        it: two notices that read alike ("[photo]" twice in one ticket) are two notices."""
        follow = None if self.on_sent is None else [self.on_sent.kind, self.on_sent.payload]
        body = json.dumps([self.purpose, self.text, self.reply_markup, follow], sort_keys=True)
        return f"{ADMIN_NOTICE_JOB}:{self.chat_id}:{hashlib.sha256(body.encode()).hexdigest()}"

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> _Notice:
        follow = payload.get("on_sent")
        return cls(
            chat_id=int(payload["chat_id"]),
            text=str(payload["text"]),
            purpose=str(payload["purpose"]),
            reply_markup=payload.get("reply_markup"),
            on_sent=FollowUp(str(follow[0]), dict(follow[1])) if follow else None,
        )


class SendDied(Exception):
    """An earlier attempt of a ``core.admin_notice`` job stopped while its send was out."""


def admin_notice_job(payload: dict[str, Any], run: JobRun) -> None:
    """``core.admin_notice``: send one admin a notice that met a transient failure.

    A retryable refusal is raised while the policy retries it; the last one (or a permanent
    refusal) is recorded in ``DeliveryFailure`` and raised, so the job ends failed. An unknown
    outcome is recorded and not sent again. An admin removed, or blocked, meanwhile is skipped.

    The send is claimed first: the job's payload names the attempt that is sending
    (``sending``, fenced on the lease) until a refusal clears it. An attempt that finds an
    earlier attempt named there knows that attempt stopped (a killed worker) while its send
    may have been out, and records an unknown outcome instead of sending a second copy.
    """
    notice = _Notice.from_payload(payload)
    if notice.chat_id not in admin_ids():
        return
    if BlockedChat.objects.filter(chat_id=notice.chat_id).exists():
        return
    died = payload.get("sending")
    if died is not None and died != run.attempt:
        exc = SendDied(f"attempt {died} stopped while sending")
        delivery_failed(notice.chat_id, notice.purpose, exc, outcome_unknown=True)
        return
    claimed = run.remember(payload, sending=run.attempt)

    def refused(exc: TelegramApiError) -> None:
        run.remember(claimed, sending=None)  # it did not go out: the next attempt may send it
        if not run.will_retry(exc):
            delivery_failed(notice.chat_id, notice.purpose, exc)
        raise exc

    def unknown(why: str, exc: BaseException) -> None:
        delivery_failed(notice.chat_id, notice.purpose, exc, outcome_unknown=True)

    send_once(
        lambda: notice.send(get_client()),
        sent=lambda message: _arrived(notice, message),
        refused=refused,
        unknown=unknown,
    )


def _arrived(notice: _Notice, message: dict[str, Any]) -> None:
    log.info("notice to admin %s (%s) delivered by its retry", notice.chat_id, notice.purpose)
    if notice.on_sent is None:
        return
    try:
        job_enqueue(
            notice.on_sent.kind,
            {
                **notice.on_sent.payload,
                "chat_id": notice.chat_id,
                "message_id": int(message["message_id"]),
            },
            kick=True,
        )
    except Exception:  # raising would make the runner send the notice a second time
        log.exception(
            "notice to admin %s (%s): its follow-up was not queued", notice.chat_id, notice.purpose
        )


def delivery_failed(
    chat_id: int, purpose: str, exc: BaseException, *, outcome_unknown: bool = False
) -> str:
    """Record a failed delivery to ``chat_id``; mark the chat blocked on a permanent refusal.
    ``outcome_unknown``: the message may have arrived (it is not sent again)."""
    description = redact(str(exc))[:500]
    if outcome_unknown:
        description = (UNKNOWN_PREFIX + description)[:500]
    DeliveryFailure.objects.create(
        chat_id=chat_id,
        purpose=purpose[:100],
        error_class=type(exc).__name__,
        description=description,
    )
    if isinstance(exc, TelegramApiError) and exc.chat_unreachable:
        BlockedChat.objects.update_or_create(
            chat_id=chat_id, defaults={"reason": exc.description[:300]}
        )
    log.warning("delivery to %s failed (%s): %s", chat_id, purpose, description)
    return description


def chat_reachable_again(chat_id: int) -> None:
    """The user wrote to the bot: whatever blocked delivery before is gone.

    Every private message pays for this, so it is one DELETE statement with its value bound
    (no transaction around it, as ``QuerySet.delete`` opens for cascades and signals: a
    BlockedChat has neither), rather than Django's private ``QuerySet._raw_delete``."""
    sql = f"DELETE FROM {BlockedChat._meta.db_table} WHERE chat_id = %s"  # noqa: S608 - the model's own table name
    with connection.cursor() as cursor:
        cursor.execute(sql, [chat_id])
