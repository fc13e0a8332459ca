"""Writes of the community app: a join request from its arrival to Telegram's answer.

Flow. ``join_request_receive`` stores a record under a fresh token (records.py) and applies the
chat's policy: manual (notify every admin with Approve / Decline), auto-approve (decide at
once), or question (ask the requester privately; a timeout job at the deadline). Deciding is
``join_request_decide``: a compare-and-set from pending to deciding, so exactly one decision
wins whoever presses at the same moment; only the winner calls Telegram.

Where the API call happens. The winner calls approve/decline once, right away (in the webhook
request for a button press). Success: every admin's copy is edited to show who decided and
when, and the welcome is sent. HIDE_REQUESTER_MISSING / USER_ALREADY_PARTICIPANT: the request
was handled in Telegram; the copies say so, no retry. A retryable failure (429, 5xx, network)
is handed to a ``community.decide`` job, due when the core retry policy says (never before
Telegram's retry_after); the job's attempts follow the same policy, and its last failure puts
the request back to pending with its buttons. Any other refusal puts it back to pending at once,
with the reason on the copies. No service holds a database transaction across a Telegram call.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

from django.utils import timezone

from community import texts
from community.models import ChatPolicy
from community.records import (
    APPROVE,
    CLOSED,
    DECIDING,
    DECLINE,
    DONE,
    PENDING,
    PENDING_TTL_MS,
    STAGE_ADMINS,
    STAGE_NEW,
    STAGE_QUESTION,
    Decider,
    JoinRequestRecord,
    JoinRequestStore,
    now_ms,
)
from community.selectors import policy_for_chat
from telegram_bot.bot import get_client
from telegram_bot.errors import TelegramApiError
from telegram_bot.jobs.retry import RetryPolicy
from telegram_bot.jobs.retry import decide as retry_decision
from telegram_bot.jobs.services import job_cancel, job_enqueue
from telegram_bot.notifications import delivery_failed, notify_admins
from telegram_bot.state import get_store
from telegram_bot.state.workflows import WorkflowStore

log = logging.getLogger(__name__)

WORKFLOW = "community.join_question"
DECIDE_JOB = "community.decide"
TIMEOUT_JOB = "community.question_timeout"

AUTO_APPROVE = Decider(None, "the auto-approve policy")
RIGHT_ANSWER = Decider(None, "the question policy (right answer)")
WRONG_ANSWER = Decider(None, "the question policy (wrong answer)")
NO_ANSWER = Decider(None, "the question policy (no answer in time)")

# DecideResult.kind
RESULT_DONE = "done"
RESULT_RETRYING = "retrying"
RESULT_CLOSED = "closed"
RESULT_FAILED = "failed"
RESULT_ALREADY = "already"
RESULT_STALE = "stale"


@dataclass(frozen=True)
class JoinRequest:
    """What the bot keeps from a chat_join_request."""

    chat_id: int
    chat_title: str
    chat_type: str
    user_id: int
    user_chat_id: int
    user_name: str
    member_name: str
    date: int
    summary: str

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> JoinRequest:
        chat, user = payload["chat"], payload["from"]
        member = " ".join(str(p) for p in (user.get("first_name"), user.get("last_name")) if p)
        return cls(
            chat_id=chat["id"],
            chat_title=str(chat.get("title") or chat.get("username") or chat["id"]),
            chat_type=str(chat.get("type") or ""),
            user_id=user["id"],
            user_chat_id=payload["user_chat_id"],
            user_name=texts.display_name(user),
            member_name=member.strip() or texts.display_name(user),
            date=int(payload.get("date") or 0),
            summary=texts.summary(payload),
        )


@dataclass(frozen=True)
class DecideResult:
    kind: str
    record: JoinRequestRecord | None
    message: str

    @property
    def ok(self) -> bool:
        return self.kind in (RESULT_DONE, RESULT_RETRYING)


def join_request_receive(*, request: JoinRequest) -> JoinRequestRecord:
    """Keep the request under a fresh token and apply the chat's policy."""
    policy = policy_for_chat(request.chat_id)
    records = _records()
    asked = policy.mode == ChatPolicy.Mode.QUESTION
    record = records.create(
        lambda token: JoinRequestRecord(
            token=token,
            chat_id=request.chat_id,
            chat_title=request.chat_title,
            chat_type=request.chat_type,
            user_id=request.user_id,
            user_chat_id=request.user_chat_id,
            user_name=request.user_name,
            member_name=request.member_name,
            summary=request.summary,
            requested_at=request.date,
            expires_at_ms=now_ms() + PENDING_TTL_MS,
            stage=STAGE_QUESTION if asked else STAGE_NEW,
        )
    )
    log.info("join request %s: chat %s, user %s", record.token, record.chat_id, record.user_id)
    replaced = records.replace_newest(request.chat_id, request.user_id, record.token)
    if replaced is not None:
        _close_replaced(replaced)
    if policy.mode == ChatPolicy.Mode.AUTO_APPROVE:
        join_request_decide(token=record.token, action=APPROVE, decider=AUTO_APPROVE)
    elif asked:
        _ask_question(record, policy)
    else:
        _hand_to_admins(record.token, note="", from_stage=STAGE_NEW)
    return record


def join_request_decide(*, token: str, action: str, decider: Decider) -> DecideResult:
    """Decide a pending request: the first decision wins (compare-and-set), then Telegram is
    asked once; a retryable failure goes to a ``community.decide`` job."""
    if action not in (APPROVE, DECLINE):
        raise ValueError(f"unknown action {action!r}")
    at = int(time.time())
    record, won = _records().update(
        token, lambda r: r.decided_by(action, decider, at) if r.pending else None
    )
    if record is None:
        return DecideResult(RESULT_STALE, None, "This request is no longer pending.")
    if not won:
        return DecideResult(RESULT_ALREADY, record, texts.already_decided(record))
    log.info("join request %s: %s by %s", token, action, decider.user_id or decider.name)
    return _carry_out(record, in_job=False, last_attempt=False)


def join_request_retry(*, token: str, attempt: int, max_retries: int) -> None:
    """One job attempt at a decision Telegram did not take yet; raises to be retried."""
    record = _records().get(token)
    if record is None or record.status != DECIDING:
        return  # carried out, put back or expired meanwhile: nothing to do
    _carry_out(record, in_job=True, last_attempt=attempt > max_retries)


def join_request_answer(*, chat_id: int, user_id: int, text: str) -> str | None:
    """The requester's private answer to the question; returns the reply to send, if any."""
    workflows = WorkflowStore(get_store())
    workflow = workflows.get(chat_id=chat_id, user_id=user_id)
    if workflow is None or workflow.name != WORKFLOW:
        return None
    if workflow.expired:
        workflows.cancel(chat_id=chat_id, user_id=user_id)
        return "Sorry, the time to answer is over."
    if not text.strip():
        return "Please answer with a text message."
    if not workflows.finish(workflow):
        return None  # another message of this user is being handled right now
    job_id = workflow.data.get("timeout_job")
    if isinstance(job_id, int):
        job_cancel(job_id=job_id)
    token = str(workflow.data.get("token") or "")
    record = _records().get(token)
    if record is None or not record.pending or record.stage != STAGE_QUESTION:
        return "Thank you. Your request is already being handled."
    policy = policy_for_chat(record.chat_id)
    if policy.accepts(text):
        result = join_request_decide(token=token, action=APPROVE, decider=RIGHT_ANSWER)
        if result.kind == RESULT_DONE:
            return "That is right: your request is approved."
        if result.kind == RESULT_RETRYING:
            return "That is right: you will be let in in a moment."
        return "Thank you. Your request is already being handled."
    if policy.on_wrong_answer == ChatPolicy.Fallback.DECLINE:
        join_request_decide(token=token, action=DECLINE, decider=WRONG_ANSWER)
        return "Sorry, that is not the right answer. Your request was declined."
    _hand_to_admins(
        token,
        note=f"Answer not accepted: {' '.join(text.split())[:200]}",
        from_stage=STAGE_QUESTION,
    )
    return "Thank you. An admin will look at your request."


def join_request_question_timeout(*, token: str) -> None:
    """The deadline of the question passed without an answer: decline, or leave to admins."""
    record = _records().get(token)
    if record is None or not record.pending or record.stage != STAGE_QUESTION:
        return
    policy = policy_for_chat(record.chat_id)
    if policy.on_timeout == ChatPolicy.Fallback.DECLINE:
        join_request_decide(token=token, action=DECLINE, decider=NO_ANSWER)
    else:
        _hand_to_admins(token, note="No answer to the question in time.", from_stage=STAGE_QUESTION)


# --- helpers ------------------------------------------------------------------------------------
def _records() -> JoinRequestStore:
    return JoinRequestStore(get_store())


def _carry_out(record: JoinRequestRecord, *, in_job: bool, last_attempt: bool) -> DecideResult:
    """Ask Telegram for ``record``'s decision (the caller won it; status DECIDING)."""
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
        if handled is not None:
            closed = _settle(record, CLOSED, reason=handled)
            _edit_copies(closed)
            return DecideResult(RESULT_CLOSED, closed, texts.already_decided(closed))
        if exc.retryable and not in_job:
            _schedule_retry(record, exc)
            _edit_copies(record)
            return DecideResult(
                RESULT_RETRYING, record, "Telegram is busy: the decision will be retried."
            )
        if exc.retryable and not last_attempt:
            raise  # the job policy retries it
        reverted = _put_back(record, exc.description or str(exc))
        if exc.retryable:
            raise  # the last attempt: recorded as failed, admins told by the job runner
        return DecideResult(RESULT_FAILED, reverted, f"Telegram refused: {exc.description}")
    done = _settle(record, DONE)
    _edit_copies(done)
    if decision.action == APPROVE:
        _welcome(done)
    return DecideResult(RESULT_DONE, done, f"{texts.past(decision.action)}.")


def _already_handled(exc: TelegramApiError) -> str | None:
    for code, reason in texts.ALREADY_HANDLED.items():
        if code in exc.description:
            return reason
    return None


def _settle(record: JoinRequestRecord, status: str, *, reason: str = "") -> JoinRequestRecord:
    settled = replace(record, status=status, closed_reason=reason)
    current, _ = _records().update(
        record.token, lambda r: settled if r.status == DECIDING else None
    )
    # A record that expired meanwhile is not recreated; the copies still show the outcome.
    return current if current is not None and current.status == status else settled


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
        _hand_to_admins(record.token, note=note, from_stage=STAGE_NEW)
    return current


def _schedule_retry(record: JoinRequestRecord, exc: TelegramApiError) -> None:
    policy = RetryPolicy.from_settings()
    # The webhook's attempt counts as the first one: its delay honours retry_after.
    delay = retry_decision(exc, attempt=1, policy=policy).delay
    job_enqueue(
        DECIDE_JOB,
        {"token": record.token, "max_retries": policy.max_retries},
        run_at=timezone.now() + timedelta(seconds=delay),
        max_retries=policy.max_retries,
        dedupe_key=f"{DECIDE_JOB}:{record.token}",
    )
    log.info("join request %s: Telegram busy (%s), retry in %.1fs", record.token, exc, delay)


def _hand_to_admins(token: str, *, note: str, from_stage: str) -> JoinRequestRecord | None:
    """Notify every admin with the buttons, once: the stage moves to "admins" by
    compare-and-set, and only the call that moved it sends."""
    records = _records()
    record, moved = records.update(
        token,
        lambda r: (
            replace(r, stage=STAGE_ADMINS, note=note)
            if r.pending and r.stage == from_stage
            else None
        ),
    )
    if record is None or not moved:
        return record
    report = notify_admins(
        texts.copy_text(record), purpose="join_request", reply_markup=texts.copy_markup(record)
    )
    sent = [[admin_id, message["message_id"]] for admin_id, message in report.sent.items()]
    current, _ = records.update(
        token, lambda r: replace(r, copies=r.copies + [c for c in sent if c not in r.copies])
    )
    if current is not None and not current.pending:
        _edit_copies(current, only=sent)  # decided while the notifications went out
    return current


def _ask_question(record: JoinRequestRecord, policy: ChatPolicy) -> None:
    timeout = policy.timeout_seconds
    job = job_enqueue(
        TIMEOUT_JOB,
        {"token": record.token},
        run_at=timezone.now() + timedelta(seconds=timeout),
        dedupe_key=f"{TIMEOUT_JOB}:{record.token}",
    )
    workflows = WorkflowStore(get_store())
    # Started before the question is sent: a quick answer must find it.
    workflows.start(
        chat_id=record.user_chat_id,
        user_id=record.user_id,
        name=WORKFLOW,
        step="answer",
        ttl_ms=timeout * 1000,
        data={"token": record.token, "timeout_job": job.pk},
    )
    try:
        get_client().send_message(
            chat_id=record.user_chat_id,
            text=texts.question_text(record, policy.question, timeout),
        )
    except TelegramApiError as exc:
        log.info("join request %s: question not delivered: %s", record.token, exc)
        workflows.cancel(chat_id=record.user_chat_id, user_id=record.user_id)
        job_cancel(job_id=job.pk)
        _hand_to_admins(
            record.token,
            note=f"The question could not be sent to the requester ({exc.description}).",
            from_stage=STAGE_QUESTION,
        )


def _close_replaced(token: str) -> None:
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
