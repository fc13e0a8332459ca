"""A join request from its arrival to its decision: the chat's policy, and the question.

``join_request_receive`` stores a record under a fresh token (records.py), once per update_id
(a re-delivered update finds the same record and only finishes what is left), and applies the
chat's policy: manual (notify every admin with Approve / Decline), auto-approve (decide at
once), or question (ask the requester privately, in a workflow of the private chat; a timeout
job at the deadline). Deciding, the admins' copies and Telegram's answer are
``join_decisions``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

from django.utils import timezone
from django.utils.translation import gettext, gettext_noop

from community import texts
from community.models import ChatPolicy
from community.records import (
    APPROVE,
    DECLINE,
    PENDING_TTL_MS,
    STAGE_NEW,
    STAGE_QUESTION,
    Decider,
    JoinRequestRecord,
    JoinRequestStore,
    now_ms,
)
from community.selectors import policy_for_chat
from community.services import join_decisions
from telegram_bot.bot import get_client
from telegram_bot.errors import TelegramApiError
from telegram_bot.jobs.services import job_cancel, job_cancel_key, job_enqueue
from telegram_bot.languages import operators_language
from telegram_bot.privacy import erasure_running
from telegram_bot.state import get_store
from telegram_bot.state.workflows import Workflow, WorkflowKind, WorkflowStore
from telegram_bot.updates import ChatJoinRequest

log = logging.getLogger(__name__)

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

# Stored in the records in English, translated where shown (texts._by).
AUTO_APPROVE = Decider(None, gettext_noop("the auto-approve policy"))
RIGHT_ANSWER = Decider(None, gettext_noop("the question policy (right answer)"))
WRONG_ANSWER = Decider(None, gettext_noop("the question policy (wrong answer)"))
NO_ANSWER = Decider(None, gettext_noop("the question policy (no answer in time)"))


def _question_v2(step: str, data: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Version 1 also kept the timeout job's id; version 2 cancels the job by its key."""
    return step, {"token": str(data["token"])}


# The question's workflow in the requester's private chat: step "answer", data: the token.
QUESTION = WorkflowKind("community.join_question", version=2, migrations={1: _question_v2})


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
            join_decisions.hand_to_admins(record.token, note="", from_stage=STAGE_QUESTION)
    elif record.stage == STAGE_NEW:
        if policy.mode == ChatPolicy.Mode.AUTO_APPROVE and not record.note:
            join_decisions.join_request_decide(
                token=record.token, action=APPROVE, decider=AUTO_APPROVE
            )
        else:  # manual; or the auto-approval was refused and put back (its note says why)
            join_decisions.hand_to_admins(record.token, note=record.note, from_stage=STAGE_NEW)
    else:  # stage "admins": the first delivery may have stopped before the admins were told
        join_decisions.finish_hand_off(record)
    return record


def join_request_answer(*, chat_id: int, user_id: int, text: str) -> str | None:
    """The requester's private answer to the question; returns the reply to send, if any."""
    workflows = WorkflowStore(get_store(), QUESTION)
    workflow = workflows.get(chat_id=chat_id, user_id=user_id)
    if workflow is None or workflow.name != QUESTION.name:
        return None
    if workflow.expired:
        workflows.cancel(chat_id=chat_id, user_id=user_id)
        return gettext("Sorry, the time to answer is over.")
    if workflow.unreadable:  # the timeout job still decides the request at its deadline
        workflows.finish(workflow)
        return gettext(
            "Sorry, your answer cannot be taken after an update of the bot. Please send your "
            "join request again."
        )
    if not text.strip():
        return gettext("Please answer with a text message.")
    if not workflows.finish(workflow):
        return None  # another message of this user is being handled right now
    token = str(workflow.data.get("token") or "")
    reply = _answer(token, text)
    # Last: an answer whose run stops before here (the database or the KV store failed) is
    # not delivered again to this workflow, finished above; the timeout job then decides.
    job_cancel_key(_timeout_key(token))
    return reply


def _answer(token: str, text: str) -> str:
    record = _records().get(token)
    if record is None or not record.pending or record.stage != STAGE_QUESTION:
        return gettext("Thank you. Your request is already being handled.")
    policy = policy_for_chat(record.chat_id)
    if policy.accepts(text):
        result = join_decisions.join_request_decide(
            token=token, action=APPROVE, decider=RIGHT_ANSWER
        )
        if result.kind == join_decisions.RESULT_DONE:
            return gettext("That is right: your request is approved.")
        if result.kind == join_decisions.RESULT_RETRYING:
            return gettext("That is right: you will be let in in a moment.")
        return gettext("Thank you. Your request is already being handled.")
    if policy.on_wrong_answer == ChatPolicy.Fallback.DECLINE:
        join_decisions.join_request_decide(token=token, action=DECLINE, decider=WRONG_ANSWER)
        return gettext("Sorry, that is not the right answer. Your request was declined.")
    with operators_language():  # the note is stored, shown to every admin
        note = gettext("Answer not accepted: %(answer)s") % {"answer": " ".join(text.split())[:200]}
    join_decisions.hand_to_admins(token, note=note, from_stage=STAGE_QUESTION)
    return gettext("Thank you. An admin will look at your request.")


def join_request_question_timeout(*, token: str) -> None:
    """The deadline of the question passed without an answer: decline, or leave to admins."""
    record = _records().get(token)
    if record is None or not record.pending:
        return
    if record.stage != STAGE_QUESTION:  # answered; or an attempt stopped while handing off
        join_decisions.finish_hand_off(record)
        return
    policy = policy_for_chat(record.chat_id)
    if policy.on_timeout == ChatPolicy.Fallback.DECLINE:
        join_decisions.join_request_decide(token=token, action=DECLINE, decider=NO_ANSWER)
    else:
        with operators_language():
            note = gettext("No answer to the question in time.")
        join_decisions.hand_to_admins(token, note=note, from_stage=STAGE_QUESTION)


def join_request_ask(*, token: str) -> None:
    """``ASK_JOB``: ask the question that waited for the requester's chat (again later if it
    is still busy); the policy may have changed meanwhile."""
    record = _records().get(token)
    if record is None or not record.pending or record.stage != STAGE_QUESTION or record.asked:
        return
    policy = policy_for_chat(record.chat_id)
    if policy.mode != ChatPolicy.Mode.QUESTION:
        join_decisions.hand_to_admins(record.token, note="", from_stage=STAGE_QUESTION)
    elif time.time() - record.requested_at > ASK_WINDOW_SECONDS:
        with operators_language():
            note = gettext(
                "The question could not be asked in time: the requester was answering "
                "another question."
            )
        join_decisions.hand_to_admins(record.token, note=note, from_stage=STAGE_QUESTION)
    else:
        _ask_question(record, policy, in_job=True)


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
        join_decisions.close_replaced(record.token)
        return False
    if previous is not None:
        join_decisions.close_replaced(previous)
    records.set_newest(record.chat_id, record.user_id, record.token)
    return True


def _ask_question(record: JoinRequestRecord, policy: ChatPolicy, *, in_job: bool = False) -> None:
    """Ask the requester privately, one question at a time: the answer is taken by the
    private chat's workflow, which a second chat's question (or another conversation with the
    bot) would replace. While that chat is busy, ``ASK_JOB`` asks later."""
    timeout = policy.timeout_seconds
    workflows = WorkflowStore(get_store(), QUESTION)
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
        dedupe_key=_timeout_key(record.token),
    )
    # Started before the question is sent: a quick answer must find it.
    started = workflows.start_if_free(
        chat_id=record.user_chat_id,
        user_id=record.user_id,
        name=QUESTION.name,
        step="answer",
        ttl_ms=timeout * 1000,
        data={"token": record.token},
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
        join_decisions.hand_to_admins(record.token, note=note, from_stage=STAGE_QUESTION)
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
    if workflow.name != QUESTION.name:
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
    workflows = WorkflowStore(store, QUESTION)
    workflow = workflows.get(chat_id=record.user_chat_id, user_id=record.user_id)
    if workflow is not None and workflow.data.get("token") == record.token:
        workflows.cancel(chat_id=record.user_chat_id, user_id=record.user_id)
    if records.newest(record.chat_id, record.user_id) == record.token:
        store.delete(records.index_key(record.chat_id, record.user_id))
    store.delete(records.key(record.token))
    return True


def _timeout_key(token: str) -> str:
    return f"{TIMEOUT_JOB}:{token}"


def _records() -> JoinRequestStore:
    return JoinRequestStore(get_store())
