"""The spam-list check of a new member (``community.spamlist``) and what the chat does with a
listed one (``MemberPolicy.spam_action``): ban, or remove (ban then unban: they may ask
again).

A join is checked whenever it comes (a re-delivery, the ``chat_member`` twin of a service
message): the verdict is cached or a database read, and Telegram's ban and unban are
idempotent, so a repeat does nothing new; the stay is marked removed (no goodbye, no welcome)
and the audit log records the removal once per stay (keyed on the stay's join update). A ban
Telegram does not take at once is retried by the ``community.spam_ban`` job.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING

from community import spamlist
from community.member_state import MemberStore, Stay
from community.models import MemberPolicy
from community.services import raid
from telegram_bot.audit import BOT, audit_record
from telegram_bot.bot import get_client
from telegram_bot.exemptions import is_exempt
from telegram_bot.jobs.services import call_or_retry_later

if TYPE_CHECKING:
    from community.services.members import MemberEvent

log = logging.getLogger(__name__)

SPAM_BAN_JOB = "community.spam_ban"
CAUSE = "spamlist"
Action = MemberPolicy.SpamAction


def spam_joiner(policy: MemberPolicy, event: MemberEvent, stay: Stay, store: MemberStore) -> bool:
    """True when the new member is spam-listed and was dealt with (banned or removed)."""
    if policy.spam_action == Action.OFF or is_exempt(event.chat_id, event.user.id):
        return False
    verdict = spamlist.check(event.user.id)
    if not verdict.listed:
        return False
    store.update_stay(  # before the ban: its leave update then finds it (no goodbye)
        event.chat_id,
        event.user.id,
        lambda s: replace(s, removed=True) if s.inside and not s.removed else None,
    )
    if policy.spam_action == Action.BAN:
        spam_ban(event.chat_id, event.user.id)
    else:
        raid.member_remove(event.chat_id, event.user.id)
    reason = f"spam list ({verdict.source})" + (f": {verdict.reason}" if verdict.reason else "")
    audit_record(
        action="ban" if policy.spam_action == Action.BAN else "kick",
        actor=BOT,
        source="auto",
        chat_id=event.chat_id,
        target_id=event.user.id,
        target_name=event.user.full_name,
        reason=reason,
        update_id=stay.update or event.update_id or None,
        cause=CAUSE,
    )
    log.info("spam list: %s in %s (%s)", event.user.id, event.chat_id, verdict.source)
    return True


def spam_ban(chat_id: int, user_id: int, *, in_job: bool = False) -> None:
    """Ban for good; a retryable refusal goes to the ``community.spam_ban`` job."""
    call_or_retry_later(
        lambda: get_client().ban_chat_member(chat_id=chat_id, user_id=user_id),
        SPAM_BAN_JOB,
        {"chat_id": chat_id, "user_id": user_id},
        in_job=in_job,
    )
