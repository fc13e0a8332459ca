"""Deciding a join request: the first decision wins, Telegram is asked once, every admin's
copy shows the outcome.

``join_request_decide`` is a compare-and-set from pending to deciding, so exactly one decision
wins whoever presses at the same moment (an admin's button, a policy); only the winner calls
Telegram. The admins' copies are sent once (``hand_to_admins``: the stage moves to "admins" by
compare-and-set) and edited to show whatever was decided.

Where the API call happens. Before the compare-and-set, a ``community.decide`` watchdog job is
queued (one per token, due after ``WATCHDOG_SECONDS``). The winner calls approve/decline once,
right away (in the webhook request for a button press). Success: every admin's copy is edited
to show who decided and when, the welcome is sent, and the watchdog is cancelled.
HIDE_REQUESTER_MISSING / USER_ALREADY_PARTICIPANT on that first call: the request was handled in
Telegram; the copies say so, no retry. A retryable failure (429, 5xx, network) turns the
watchdog into the retry, due when the core retry policy says (never before Telegram's
retry_after); the job's attempts follow the same policy, and its last failure puts the request
back to pending with its buttons. Any other refusal puts it back to pending at once, with the
reason on the copies. If the worker dies or the KV store fails before Telegram's answer is
recorded, the record stays "deciding" until the watchdog asks Telegram again; from a job,
HIDE_REQUESTER_MISSING / USER_ALREADY_PARTICIPANT mean the earlier call went through. No service
holds a database transaction across a Telegram call.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace
from datetime import timedelta

from django.utils import timezone
from django.utils.translation import gettext

from community import texts
from community.records import (
    APPROVE,
    CLOSED,
    DECIDING,
    DECLINE,
    DONE,
    PENDING,
    STAGE_ADMINS,
    STAGE_NEW,
    Decider,
    JoinRequestRecord,
    JoinRequestStore,
)
from community.selectors import policy_for_chat
from telegram_bot.bot import get_client
from telegram_bot.errors import TelegramApiError
from telegram_bot.jobs.services import job_cancel, job_enqueue, job_retry_later
from telegram_bot.notifications import FollowUp, delivery_failed, notify_admins
from telegram_bot.state import get_store

log = logging.getLogger(__name__)

DECIDE_JOB = "community.decide"
# Queued by the core when an admin's copy of a request arrived late (its retry job).
COPY_SENT_JOB = "community.copy_sent"
# When the watchdog of a decision comes: after the longest Telegram call can have ended (the
# client's timeouts: connect 5 s + write 10 s + read 35 s + pool 5 s), so that it does not
# race the webhook's own call, and soon enough that the request does not look stuck for long.
WATCHDOG_SECONDS = 60

# DecideResult.kind
RESULT_DONE = "done"
RESULT_RETRYING = "retrying"
RESULT_CLOSED = "closed"
RESULT_FAILED = "failed"
RESULT_ALREADY = "already"
RESULT_STALE = "stale"


@dataclass(frozen=True)
class DecideResult:
    kind: str
    record: JoinRequestRecord | None
    message: str

    @property
    def ok(self) -> bool:
        return self.kind in (RESULT_DONE, RESULT_RETRYING)


def join_request_decide(*, token: str, action: str, decider: Decider) -> DecideResult:
    """Decide a pending request: the first decision wins (compare-and-set), then Telegram is
    asked once; a retryable failure goes to a ``community.decide`` job.

    The watchdog (that same job, due after ``WATCHDOG_SECONDS``) is queued before the
    decision is taken: if the worker dies, or the KV store fails, between winning and
    recording Telegram's answer, the record would otherwise stay "deciding" for good. A press
    on a record already deciding queues it too (the same job, by its key; a new one if that
    one is gone), so a stuck decision never lacks its watchdog.
    """
    if action not in (APPROVE, DECLINE):
        raise ValueError(f"unknown action {action!r}")
    records = _records()
    current = records.get(token)
    if current is None:
        return DecideResult(RESULT_STALE, None, gettext("This request is no longer pending."))
    watchdog = _watch(token) if current.status in (PENDING, DECIDING) else None
    at = int(time.time())
    record, won = records.update(
        token, lambda r: r.decided_by(action, decider, at) if r.pending else None
    )
    if not won and watchdog is not None and (record is None or record.status != DECIDING):
        _unwatch(watchdog)  # nothing in progress (a deciding record may share this job)
    if record is None:
        return DecideResult(RESULT_STALE, None, gettext("This request is no longer pending."))
    if not won:
        return DecideResult(RESULT_ALREADY, record, texts.already_decided(record))
    log.info("join request %s: %s by %s", token, action, decider.user_id or decider.name)
    return _carry_out(record, watchdog=watchdog, in_job=False, last_attempt=False)


def join_request_retry(*, token: str, attempt: int, last_attempt: bool) -> None:
    """One job attempt at a decision still "deciding": after a retryable failure, or the
    watchdog finding it stuck (the webhook stopped before recording Telegram's answer).
    Raises to be retried."""
    record = _records().get(token)
    if record is not None and record.pending:
        finish_hand_off(record)  # put back by an attempt that stopped before telling admins
    if record is None or record.status != DECIDING:
        return  # carried out, put back or expired meanwhile: nothing to do
    log.info("join request %s: asking Telegram again (job attempt %s)", token, attempt)
    _carry_out(record, watchdog=None, in_job=True, last_attempt=last_attempt)


def join_request_copy_sent(*, token: str, chat_id: int, message_id: int) -> None:
    """An admin's copy the core's retry job delivered late: keep it with the others (so the
    decision is shown on it), and show at once a decision taken meanwhile."""
    copy = [chat_id, message_id]
    current, _ = _records().update(
        token, lambda r: None if copy in r.copies else replace(r, copies=[*r.copies, copy])
    )
    if current is not None and not current.pending:
        _edit_copies(current, only=[copy])


def _records() -> JoinRequestStore:
    return JoinRequestStore(get_store())


def _carry_out(
    record: JoinRequestRecord, *, watchdog: int | None, in_job: bool, last_attempt: bool
) -> DecideResult:
    """Ask Telegram for ``record``'s decision (the caller won it; status DECIDING).

    ``watchdog``: the job queued by the webhook's decision, cancelled once the outcome is
    recorded. In a job (``in_job``), Telegram saying the request is no longer there
    (HIDE_REQUESTER_MISSING) or the user is a member already (USER_ALREADY_PARTICIPANT, after
    an approval) most likely answers our own earlier call, whose outcome was never recorded:
    that is the decision's success, not "already handled in Telegram".
    """
    decision = record.decision
    assert decision is not None
    client = get_client()
    try:
        if decision.action == APPROVE:
            client.approve_chat_join_request(chat_id=record.chat_id, user_id=record.user_id)
        else:
            client.decline_chat_join_request(chat_id=record.chat_id, user_id=record.user_id)
    except TelegramApiError as exc:
        handled = _already_handled(exc)
        if handled is not None and in_job and _done_earlier(decision.action, exc):
            log.info("join request %s: Telegram had taken the earlier call: %s", record.token, exc)
            return _succeeded(record, watchdog)
        if handled is not None:
            closed, changed = _settle(record, CLOSED, reason=handled)
            if changed:
                _edit_copies(closed)
            _unwatch(watchdog)
            return DecideResult(RESULT_CLOSED, closed, texts.already_decided(closed))
        if exc.retryable and not in_job:
            _schedule_retry(record, exc)
            _edit_copies(record)
            return DecideResult(
                RESULT_RETRYING, record, gettext("Telegram is busy: the decision will be retried.")
            )
        if exc.retryable and not last_attempt:
            raise  # the job policy retries it
        reverted = _put_back(record, exc.description or str(exc))
        _unwatch(watchdog)
        if exc.retryable:
            raise  # the last attempt: recorded as failed, admins told by the job runner
        return DecideResult(
            RESULT_FAILED,
            reverted,
            gettext("Telegram refused: %(error)s") % {"error": exc.description},
        )
    return _succeeded(record, watchdog)


def _succeeded(record: JoinRequestRecord, watchdog: int | None) -> DecideResult:
    """Telegram took the decision: record it, show it on the copies, welcome the member."""
    decision = record.decision
    assert decision is not None
    done, changed = _settle(record, DONE)
    if changed:  # else another attempt recorded it (and edited, and welcomed) first
        _edit_copies(done)
        if decision.action == APPROVE:
            _welcome(done)
    # Last: should the database fail here, the outcome is recorded and shown already, and the
    # watchdog, when it comes, finds nothing to do.
    _unwatch(watchdog)
    return DecideResult(RESULT_DONE, done, f"{texts.past(decision.action)}.")


def _already_handled(exc: TelegramApiError) -> str | None:
    for code, reason in texts.ALREADY_HANDLED.items():
        if code in exc.description:
            return reason
    return None


def _done_earlier(action: str, exc: TelegramApiError) -> bool:
    """Whether Telegram's "nothing to decide" can be the effect of an earlier call of
    ``action``: a decline cannot have made the user a member."""
    return action == APPROVE or "USER_ALREADY_PARTICIPANT" not in exc.description


def _settle(
    record: JoinRequestRecord, status: str, *, reason: str = ""
) -> tuple[JoinRequestRecord, bool]:
    """Record Telegram's answer; True when this call did (a record still "deciding")."""
    settled = replace(record, status=status, closed_reason=reason)
    current, changed = _records().update(
        record.token, lambda r: settled if r.status == DECIDING else None
    )
    if current is None:
        # A record that expired meanwhile is not recreated; the copies still show the outcome.
        return settled, True
    return current, changed


def _put_back(record: JoinRequestRecord, description: str) -> JoinRequestRecord:
    """Telegram refused the decision: the request is pending again, with the reason shown."""
    assert record.decision is not None
    note = texts.failure_note(record.decision, description)
    stage = STAGE_ADMINS if record.copies else STAGE_NEW
    reverted = replace(record, status=PENDING, decision=None, note=note, stage=stage)
    current, _ = _records().update(
        record.token, lambda r: replace(reverted, copies=r.copies) if r.status == DECIDING else None
    )
    current = current or reverted
    log.warning("join request %s: Telegram refused the decision: %s", record.token, description)
    if current.copies:
        _edit_copies(current)
    else:  # decided by a policy: nobody has seen it yet
        hand_to_admins(record.token, note=note, from_stage=STAGE_NEW)
    return current


def _decide_job_key(token: str) -> str:
    return f"{DECIDE_JOB}:{token}"


def _watch(token: str) -> int:
    """Queue the watchdog of a decision about to be taken; its id. One job per token: two
    presses at once share it, and so does the retry of a busy Telegram."""
    job = job_enqueue(
        DECIDE_JOB,
        {"token": token},
        run_at=timezone.now() + timedelta(seconds=WATCHDOG_SECONDS),
        dedupe_key=_decide_job_key(token),
    )
    return job.pk


def _unwatch(watchdog: int | None) -> None:
    """The outcome is recorded: the watchdog would find nothing to do."""
    if watchdog is not None:
        job_cancel(job_id=watchdog)


def _schedule_retry(record: JoinRequestRecord, exc: TelegramApiError) -> None:
    """The watchdog (the job of the token's key) becomes the retry, due when the retry policy
    says (the webhook's attempt counts as the first one; never before retry_after): replaced
    in one transaction, so the decision is never left without a job."""
    job = job_retry_later(
        DECIDE_JOB, {"token": record.token}, dedupe_key=_decide_job_key(record.token), error=exc
    )
    log.info(
        "join request %s: Telegram busy (%s), retry at %s", record.token, exc, job.next_attempt
    )


def hand_to_admins(token: str, *, note: str, from_stage: str) -> JoinRequestRecord | None:
    """Notify every admin with the buttons, once: the stage moves to "admins" by
    compare-and-set, and only the call that moved it sends."""
    record, moved = _records().update(
        token,
        lambda r: (
            replace(r, stage=STAGE_ADMINS, note=note, notified=False)
            if r.pending and r.stage == from_stage
            else None
        ),
    )
    if record is None or not moved:
        return record
    return _notify(record)


def finish_hand_off(record: JoinRequestRecord) -> JoinRequestRecord | None:
    """Notify the admins of a request handed to them whose copies were never recorded: the
    run that moved the stage stopped before (a failure, a killed process). At least once: a
    run that stopped after sending but before recording has its copies sent again."""
    if not (record.pending and record.stage == STAGE_ADMINS and not record.notified):
        return record
    log.info("join request %s: finishing the admins' notification", record.token)
    return _notify(record)


def _notify(record: JoinRequestRecord) -> JoinRequestRecord | None:
    report = notify_admins(
        texts.copy_text(record),
        purpose="join_request",
        reply_markup=texts.copy_markup(record),
        on_sent=FollowUp(COPY_SENT_JOB, {"token": record.token}),
    )
    sent = [[admin_id, message["message_id"]] for admin_id, message in report.sent.items()]
    current, _ = _records().update(
        record.token,
        lambda r: replace(
            r, copies=r.copies + [c for c in sent if c not in r.copies], notified=True
        ),
    )
    if current is not None and not current.pending:
        _edit_copies(current, only=sent)  # decided while the notifications went out
    return current


def close_replaced(token: str) -> None:
    closed, changed = _records().update(
        token,
        lambda r: replace(r, status=CLOSED, closed_reason=texts.REPLACED) if r.pending else None,
    )
    if closed is not None and changed:
        _edit_copies(closed)


def _edit_copies(record: JoinRequestRecord, *, only: list[list[int]] | None = None) -> None:
    """Show ``record`` as it stands on every admin's copy; one failing copy stops no other."""
    client = get_client()
    text, markup = texts.copy_text(record), texts.copy_markup(record)
    for chat_id, message_id in record.copies if only is None else only:
        try:
            client.edit_message_text(
                chat_id=chat_id, message_id=message_id, text=text, reply_markup=markup
            )
        except TelegramApiError as exc:
            log.info("join request %s: copy in %s not edited: %s", record.token, chat_id, exc)


def _welcome(record: JoinRequestRecord) -> None:
    text = policy_for_chat(record.chat_id).welcome_for(record.member_name)
    if text is None:
        return
    # In a group the welcome goes to the group; a channel has no place for it but the
    # member's private chat.
    target = record.chat_id if record.chat_type in ("group", "supergroup") else record.user_chat_id
    try:
        get_client().send_message(chat_id=target, text=text)
    except TelegramApiError as exc:
        delivery_failed(target, "community.welcome", exc)
