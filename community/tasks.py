"""Job entry points of the community app. Thin: unpack the payload, call the service."""

from __future__ import annotations

from typing import Any

from community import growth
from community.services import join_decisions, join_requests, members, raid, spam
from telegram_bot.jobs.runner import JobRun


def decide_job(payload: dict[str, Any], run: JobRun) -> None:
    """Ask Telegram again for a decision that met a 429, a 5xx or a network error, or that the
    webhook left "deciding" (the watchdog): nothing to do once the decision is recorded."""
    join_decisions.join_request_retry(
        token=str(payload["token"]), attempt=run.attempt, last_attempt=run.last_attempt
    )


def question_timeout_job(payload: dict[str, Any], run: JobRun) -> None:
    """The requester's time to answer is over."""
    join_requests.join_request_question_timeout(token=str(payload["token"]))


def question_ask_job(payload: dict[str, Any], run: JobRun) -> None:
    """A question that waited for the requester's private chat to be free."""
    join_requests.join_request_ask(token=str(payload["token"]))


def copy_sent_job(payload: dict[str, Any], run: JobRun) -> None:
    """An admin's copy of a request arrived late (the core retried it): keep it."""
    join_decisions.join_request_copy_sent(
        token=str(payload["token"]),
        chat_id=int(payload["chat_id"]),
        message_id=int(payload["message_id"]),
    )


def captcha_job(payload: dict[str, Any], run: JobRun) -> None:
    """A captcha's deadline, or the finishing of an outcome Telegram did not take at once."""
    members.captcha_deadline(token=str(payload["token"]))


def raid_end_job(payload: dict[str, Any], run: JobRun) -> None:
    """The end of an anti-raid "join requests only" mode: revoke its link, drop its notice."""
    raid.raid_end(int(payload["chat_id"]), str(payload["link"]), members.members())


def raid_remove_job(payload: dict[str, Any], run: JobRun) -> None:
    """A removal of the "join requests only" mode that Telegram did not take at once."""
    raid.member_remove(int(payload["chat_id"]), int(payload["user_id"]), in_job=True)


def spam_ban_job(payload: dict[str, Any], run: JobRun) -> None:
    """A spam-listed joiner's ban that Telegram did not take at once."""
    spam.spam_ban(int(payload["chat_id"]), int(payload["user_id"]), in_job=True)


def member_counts_tick() -> int:
    """django-q2 schedule, daily: the member count of every chat the bot is in."""
    return growth.member_counts_fetch()


JOB_HANDLERS = {
    members.CAPTCHA_JOB: captcha_job,
    raid.RAID_END_JOB: raid_end_job,
    raid.RAID_REMOVE_JOB: raid_remove_job,
    spam.SPAM_BAN_JOB: spam_ban_job,
    join_decisions.DECIDE_JOB: decide_job,
    join_requests.TIMEOUT_JOB: question_timeout_job,
    join_requests.ASK_JOB: question_ask_job,
    join_decisions.COPY_SENT_JOB: copy_sent_job,
}
