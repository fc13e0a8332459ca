"""Writes of the community app: a join request from its arrival to Telegram's answer.

Flow. ``join_request_receive`` stores a record under a fresh token (records.py), once per
update_id (a re-delivered update finds the same record and only finishes what is left), and
applies the chat's policy: manual (notify every admin with Approve / Decline), auto-approve
(decide at once), or question (ask the requester privately; a timeout job at the deadline).
Deciding is ``join_request_decide``: a compare-and-set from pending to deciding, so exactly one
decision wins whoever presses at the same moment; only the winner calls Telegram.

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
from django.utils.translation import gettext, gettext_noop

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
from telegram_bot.jobs.services import job_cancel, job_enqueue, job_retry_later
from telegram_bot.languages import operators_language
from telegram_bot.notifications import FollowUp, delivery_failed, notify_admins
from telegram_bot.privacy import erasure_running
from telegram_bot.state import get_store
from telegram_bot.state.workflows import Workflow, WorkflowStore
from telegram_bot.updates import ChatJoinRequest

log = logging.getLogger(__name__)

WORKFLOW = "community.join_question"
DECIDE_JOB = "community.decide"
TIMEOUT_JOB = "community.question_timeout"
# A question waiting for the requester's private chat to be free (another chat's question, a
# support conversation): asked by this job, which looks again every ASK_AGAIN_SECONDS.
ASK_JOB = "community.question_ask"
ASK_AGAIN_SECONDS = 15
# Telegram lets the bot write to a requester for 5 minutes after the request: a question still
# waiting then goes to the admins instead of waiting for the chat any longer.
ASK_WINDOW_SECONDS = 280
# How long one asker holds the question (JoinRequestRecord.asking_until): past the longest
# Telegram call (the client's timeouts add up to 55 s), so a second asker never sends while
# the first one's call can still succeed; a holder that stopped is replaced after it.
ASK_HOLD_MS = 60_000
# Queued by the core when an admin's copy of a request arrived late (its retry job).
COPY_SENT_JOB = "community.copy_sent"
# When the watchdog of a decision comes: after the longest Telegram call can have ended (the
# client's timeouts: connect 5 s + write 10 s + read 35 s + pool 5 s), so that it does not
# race the webhook's own call, and soon enough that the request does not look stuck for long.
WATCHDOG_SECONDS = 60

# Stored in the records in English, translated where shown (texts._by).
AUTO_APPROVE = Decider(None, gettext_noop("the auto-approve policy"))
RIGHT_ANSWER = Decider(None, gettext_noop("the question policy (right answer)"))
WRONG_ANSWER = Decider(None, gettext_noop("the question policy (wrong answer)"))
NO_ANSWER = Decider(None, gettext_noop("the question policy (no answer in time)"))

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
    def from_update(cls, request: ChatJoinRequest) -> JoinRequest:
        chat, user = request.chat, request.from_user
        return cls(
            chat_id=chat.id,
            chat_title=chat.title or chat.username or str(chat.id),
            chat_type=chat.type,
            user_id=user.id,
            user_chat_id=request.user_chat_id,
            user_name=texts.display_name(user),
            member_name=user.full_name.strip() or texts.display_name(user),
            date=request.date,
            summary=texts.summary(request),
        )


@dataclass(frozen=True)
class DecideResult:
    kind: str
    record: JoinRequestRecord | None
    message: str

    @property
    def ok(self) -> bool:
        return self.kind in (RESULT_DONE, RESULT_RETRYING)


def join_request_receive(*, request: JoinRequest, update_id: int) -> JoinRequestRecord | None:
    """Keep the request and apply the chat's policy, once per update.

    Telegram delivers the same update again after a 503 (the KV store or the database failed,
    maybe after everything was done) or when the worker died: the re-delivery finds the record
    of the first delivery (``JoinRequestStore.receive``) and only finishes what is still to do.
    Each step moves the record by compare-and-set, so none is done twice: the admins are
    notified once (stage ``new`` -> ``admins``) until their copies are recorded (``notified``:
    a run that stopped in between is finished by the next delivery or job attempt), a policy
    decides once (``pending`` -> ``deciding``), the question is asked until it is recorded as
    sent (``asked``). An answer cancels the question's timeout job last, once it decided: an
    answer that failed half-way is not delivered to its finished workflow again, and the
    timeout job decides instead.
    """
    policy = policy_for_chat(request.chat_id)
    ask = policy.mode == ChatPolicy.Mode.QUESTION
    record, created = _records().receive(
        update_id,
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
            stage=STAGE_QUESTION if ask else STAGE_NEW,
        ),
    )
    if record is None:
        return None
    log.info(
        "join request %s: chat %s, user %s%s",
        record.token,
        record.chat_id,
        record.user_id,
        "" if created else f" (update {update_id} delivered again)",
    )
    if not record.pending or not _become_newest(record):
        return record  # decided or closed: nothing is left to do for this update
    if _requester_erased(record):
        return None
    if record.stage == STAGE_QUESTION:
        if record.asked:
            pass  # the question went out: the answer or the timeout job takes it from here
        elif ask:
            _ask_question(record, policy)
        else:  # the policy changed between the two deliveries
            _hand_to_admins(record.token, note="", from_stage=STAGE_QUESTION)
    elif record.stage == STAGE_NEW:
        if policy.mode == ChatPolicy.Mode.AUTO_APPROVE and not record.note:
            join_request_decide(token=record.token, action=APPROVE, decider=AUTO_APPROVE)
        else:  # manual; or the auto-approval was refused and put back (its note says why)
            _hand_to_admins(record.token, note=record.note, from_stage=STAGE_NEW)
    else:  # stage "admins": the first delivery may have stopped before the admins were told
        _finish_hand_off(record)
    return record


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
        _finish_hand_off(record)  # put back by an attempt that stopped before telling admins
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


def join_request_answer(*, chat_id: int, user_id: int, text: str) -> str | None:
    """The requester's private answer to the question; returns the reply to send, if any."""
    workflows = WorkflowStore(get_store())
    workflow = workflows.get(chat_id=chat_id, user_id=user_id)
    if workflow is None or workflow.name != WORKFLOW:
        return None
    if workflow.expired:
        workflows.cancel(chat_id=chat_id, user_id=user_id)
        return gettext("Sorry, the time to answer is over.")
    if not text.strip():
        return gettext("Please answer with a text message.")
    if not workflows.finish(workflow):
        return None  # another message of this user is being handled right now
    reply = _answer(str(workflow.data.get("token") or ""), text)
    # Last: an answer whose run stops before here (the database or the KV store failed) is
    # not delivered again to this workflow, finished above; the timeout job then decides.
    job_id = workflow.data.get("timeout_job")
    if isinstance(job_id, int):
        job_cancel(job_id=job_id)
    return reply


def _answer(token: str, text: str) -> str:
    record = _records().get(token)
    if record is None or not record.pending or record.stage != STAGE_QUESTION:
        return gettext("Thank you. Your request is already being handled.")
    policy = policy_for_chat(record.chat_id)
    if policy.accepts(text):
        result = join_request_decide(token=token, action=APPROVE, decider=RIGHT_ANSWER)
        if result.kind == RESULT_DONE:
            return gettext("That is right: your request is approved.")
        if result.kind == RESULT_RETRYING:
            return gettext("That is right: you will be let in in a moment.")
        return gettext("Thank you. Your request is already being handled.")
    if policy.on_wrong_answer == ChatPolicy.Fallback.DECLINE:
        join_request_decide(token=token, action=DECLINE, decider=WRONG_ANSWER)
        return gettext("Sorry, that is not the right answer. Your request was declined.")
    with operators_language():  # the note is stored, shown to every admin
        note = gettext("Answer not accepted: %(answer)s") % {"answer": " ".join(text.split())[:200]}
    _hand_to_admins(token, note=note, from_stage=STAGE_QUESTION)
    return gettext("Thank you. An admin will look at your request.")


def join_request_question_timeout(*, token: str) -> None:
    """The deadline of the question passed without an answer: decline, or leave to admins."""
    record = _records().get(token)
    if record is None or not record.pending:
        return
    if record.stage != STAGE_QUESTION:  # answered; or an attempt stopped while handing off
        _finish_hand_off(record)
        return
    policy = policy_for_chat(record.chat_id)
    if policy.on_timeout == ChatPolicy.Fallback.DECLINE:
        join_request_decide(token=token, action=DECLINE, decider=NO_ANSWER)
    else:
        with operators_language():
            note = gettext("No answer to the question in time.")
        _hand_to_admins(token, note=note, from_stage=STAGE_QUESTION)


# --- helpers ------------------------------------------------------------------------------------
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
        _hand_to_admins(record.token, note=note, from_stage=STAGE_NEW)
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


def _become_newest(record: JoinRequestRecord) -> bool:
    """Make ``record`` its requester's newest request in the chat, closing the older one;
    False when a newer request came meanwhile (a late re-delivery), which closes this one.
    The older request is closed before the index moves: a re-delivery after a failure in
    between finds the index unchanged and closes it (again: a no-op) before moving it."""
    records = _records()
    previous = records.newest(record.chat_id, record.user_id)
    if previous == record.token:
        return True
    other = records.get(previous) if previous is not None else None
    if other is not None and other.newer_than(record):
        _close_replaced(record.token)
        return False
    if previous is not None:
        _close_replaced(previous)
    records.set_newest(record.chat_id, record.user_id, record.token)
    return True


def _hand_to_admins(token: str, *, note: str, from_stage: str) -> JoinRequestRecord | None:
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


def _finish_hand_off(record: JoinRequestRecord) -> JoinRequestRecord | None:
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


def _ask_question(record: JoinRequestRecord, policy: ChatPolicy, *, in_job: bool = False) -> None:
    """Ask the requester privately, one question at a time: the answer is taken by the
    private chat's workflow, which a second chat's question (or another conversation with the
    bot) would replace. While that chat is busy, ``ASK_JOB`` asks later."""
    timeout = policy.timeout_seconds
    workflows = WorkflowStore(get_store())
    busy = workflows.get(chat_id=record.user_chat_id, user_id=record.user_id)
    if (
        busy is not None
        and not busy.expired
        and busy.data.get("token") != record.token
        and not _question_over(busy)
    ):
        _ask_later(record, in_job=in_job)
        return
    held = _hold_question(record.token)
    if held is None:
        return  # asked, decided or handed to the admins meanwhile
    if not held:  # a re-delivery and the waiting question's job at once: one asks
        _ask_later(record, in_job=in_job)
        return
    job = job_enqueue(  # a re-delivery gets the job of the first delivery back
        TIMEOUT_JOB,
        {"token": record.token},
        run_at=timezone.now() + timedelta(seconds=timeout),
        dedupe_key=f"{TIMEOUT_JOB}:{record.token}",
    )
    # Started before the question is sent: a quick answer must find it.
    started = workflows.start_if_free(
        chat_id=record.user_chat_id,
        user_id=record.user_id,
        name=WORKFLOW,
        step="answer",
        ttl_ms=timeout * 1000,
        data={"token": record.token, "timeout_job": job.pk},
        ours=lambda workflow: (
            workflow.data.get("token") == record.token or _question_over(workflow)
        ),
    )
    if started is None:  # another question or conversation started at the same moment
        job_cancel(job_id=job.pk)
        _release_question(record.token)
        _ask_later(record, in_job=in_job)
        return
    if _requester_erased(record):  # after the workflow, its last write about the requester
        job_cancel(job_id=job.pk)
        return
    try:
        get_client().send_message(
            chat_id=record.user_chat_id,
            text=texts.question_text(record, policy.question, timeout),
        )
    except TelegramApiError as exc:
        log.info("join request %s: question not delivered: %s", record.token, exc)
        workflows.cancel(chat_id=record.user_chat_id, user_id=record.user_id)
        job_cancel(job_id=job.pk)
        with operators_language():
            note = gettext("The question could not be sent to the requester (%(error)s).") % {
                "error": exc.description
            }
        _hand_to_admins(record.token, note=note, from_stage=STAGE_QUESTION)
        return
    # Recorded after sending: a delivery that stops before this point is finished by the
    # re-delivery, which asks again (the timeout job is the same one, by its dedupe key).
    _records().update(
        record.token, lambda r: None if r.asked else replace(r, asked=True, asking_until=0)
    )


def _question_over(workflow: Workflow) -> bool:
    """True for the workflow of a join-request question whose request was decided meanwhile
    (an admin, from the list): the chat is free for the next chat's question, which takes its
    place (a late answer to the old question keeps its replies while nothing else waits)."""
    if workflow.name != WORKFLOW:
        return False
    other = _records().get(str(workflow.data.get("token") or ""))
    return other is None or not other.pending or other.stage != STAGE_QUESTION


def _hold_question(token: str) -> bool | None:
    """Take the asking of ``token``'s question for ``ASK_HOLD_MS`` (compare-and-set on the
    record): True when taken, False when another delivery or job holds it, None when there is
    nothing to ask any more."""
    now = now_ms()
    record, moved = _records().update(
        token,
        lambda r: (
            replace(r, asking_until=now + ASK_HOLD_MS)
            if r.pending and r.stage == STAGE_QUESTION and not r.asked and r.asking_until <= now
            else None
        ),
    )
    if record is None or not record.pending or record.stage != STAGE_QUESTION or record.asked:
        return None
    return moved


def _release_question(token: str) -> None:
    _records().update(token, lambda r: replace(r, asking_until=0) if r.asking_until else None)


def _ask_later(record: JoinRequestRecord, *, in_job: bool = False) -> None:
    """Queue ``ASK_JOB``. From the webhook once per request (its dedupe key); from the job
    itself without the key, which the running job still holds (it would be handed back)."""
    log.info("join request %s: the requester's chat is busy: the question waits", record.token)
    job_enqueue(
        ASK_JOB,
        {"token": record.token},
        run_at=timezone.now() + timedelta(seconds=ASK_AGAIN_SECONDS),
        dedupe_key=None if in_job else f"{ASK_JOB}:{record.token}",
    )


def join_request_ask(*, token: str) -> None:
    """``ASK_JOB``: ask the question that waited for the requester's chat (again later if it
    is still busy); the policy may have changed meanwhile."""
    record = _records().get(token)
    if record is None or not record.pending or record.stage != STAGE_QUESTION or record.asked:
        return
    policy = policy_for_chat(record.chat_id)
    if policy.mode != ChatPolicy.Mode.QUESTION:
        _hand_to_admins(record.token, note="", from_stage=STAGE_QUESTION)
    elif time.time() - record.requested_at > ASK_WINDOW_SECONDS:
        with operators_language():
            note = gettext(
                "The question could not be asked in time: the requester was answering "
                "another question."
            )
        _hand_to_admins(record.token, note=note, from_stage=STAGE_QUESTION)
    else:
        _ask_question(record, policy, in_job=True)


def _requester_erased(record: JoinRequestRecord) -> bool:
    """True, having taken back this request's keys (its record, the requester's index and
    workflow naming it), when the requester's erasure ran meanwhile: it is running now (it may
    have scanned past these keys), or it ran between two of our writes (it deleted the record
    and missed the writes after). Called after a write about the requester: an erasure that
    starts later finds the write itself."""
    store = get_store()
    records = _records()
    if not erasure_running(store, record.user_id) and records.get(record.token) is not None:
        return False
    log.info("join request %s: its requester is being erased: dropped", record.token)
    workflows = WorkflowStore(store)
    workflow = workflows.get(chat_id=record.user_chat_id, user_id=record.user_id)
    if workflow is not None and workflow.data.get("token") == record.token:
        workflows.cancel(chat_id=record.user_chat_id, user_id=record.user_id)
    if records.newest(record.chat_id, record.user_id) == record.token:
        store.delete(records.index_key(record.chat_id, record.user_id))
    store.delete(records.key(record.token))
    return True


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
