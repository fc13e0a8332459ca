"""The audit log: every action of an admin or moderator, recorded once.

Any app records through ``audit_record``: a Telegram command or button (with the update id, so
that a re-delivered update records nothing twice: the row is unique on update id + action +
cause, the cause telling apart the automatic actions one message brings about),
an admin-site action (no update id: each call is one entry) or an automatic action taken for a
member's message (anti-flood, violations, the warning limit). Free text is clipped to the
column sizes, never refused: a log that fails to record is worse than a clipped reason. NUL
characters (which Telegram names may hold and PostgreSQL text cannot) are dropped.

Apps wrap an action in one line: ``audit_step`` (a block: done, or failed with the error when
it raises); in the admin site ``admin.audited_action`` (an action on a queryset) and
``admin.AuditedModelAdmin`` (saves and deletions of a model admin), in this package.

Every entry is also posted to the log channels that want it (``AUDIT_LOG_CHAT_ID`` for all
entries, and a chat's own log channel, which an app names through ``register_log_chat``), by a
job queued in the same transaction as the entry.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import DatabaseError, IntegrityError, transaction
from django.utils import translation
from django.utils.translation import gettext

from telegram_bot.errors import BotError, TelegramApiError
from telegram_bot.jobs.services import job_enqueue
from telegram_bot.languages import chat_language
from telegram_bot.models import AuditEntry

log = logging.getLogger(__name__)
Outcome = AuditEntry.Outcome
SOURCES = frozenset({"command", "button", "panel", "admin", "auto", "miniapp"})
MIRROR_JOB = "core.audit_mirror"


@dataclass(frozen=True)
class Actor:
    """Who acted: a Telegram user (``telegram_id``), an admin-site user (``name`` only) or
    the bot itself (``Actor.BOT``, for automatic actions)."""

    telegram_id: int | None
    name: str = ""


BOT = Actor(None, "bot")


def telegram_actor(user: Any) -> Actor:
    """The Telegram user of an update (``updates.User``; None for an update without one)."""
    if user is None:
        return Actor(None, "")
    return Actor(user.id, user.full_name)


def audit_record(
    *,
    action: str,
    actor: Actor,
    source: str,
    chat_id: int | None = None,
    target_id: int | None = None,
    target_name: str = "",
    reason: str = "",
    outcome: str = Outcome.DONE,
    detail: str = "",
    update_id: int | None = None,
    cause: str = "",
) -> AuditEntry | None:
    """Record one action; None when this update already recorded this action (for this
    ``cause``: an automatic action names what brought it about, such as ``flood``)."""
    if source not in SOURCES:
        raise ValueError(f"audit source {source!r} is not one of {sorted(SOURCES)}")
    if not action or len(action) > 40:
        raise ValueError(f"audit action {action!r}: 1-40 characters")
    if len(cause) > 20:
        raise ValueError(f"audit cause {cause!r}: at most 20 characters")
    entry = AuditEntry(
        actor_id=actor.telegram_id,
        actor_name=clean(actor.name, 200),
        source=source,
        chat_id=chat_id,
        action=action,
        target_id=target_id,
        target_name=clean(target_name, 200),
        reason=clean(reason, 500),
        outcome=outcome,
        detail=clean(detail, 500),
        update_id=update_id,
        cause=cause,
    )
    try:
        with transaction.atomic():
            entry.save()
            _mirror(entry)
    except IntegrityError:
        if update_id is None:
            raise
        return None
    return entry


def clean(text: str, limit: int) -> str:
    """``text`` without NUL characters, clipped to ``limit``."""
    return text.replace("\x00", "")[:limit]


# -- one line per action ---------------------------------------------------------------------


@dataclass
class Step:
    """What ``audit_step`` records; the block may fill in the outcome and the detail."""

    fields: dict[str, Any]
    outcome: str = Outcome.DONE
    detail: str = ""
    entry: AuditEntry | None = field(default=None, repr=False)

    def refused(self, why: str) -> None:
        self.outcome, self.detail = Outcome.REFUSED, why

    def failed(self, why: str) -> None:
        self.outcome, self.detail = Outcome.FAILED, why


@contextmanager
def audit_step(action: str, *, actor: Actor, source: str, **fields: Any) -> Iterator[Step]:
    """Record ``action`` once the block ends: done (or what the block set on the step), or
    failed with the error when the block raises (the error is raised on). A failure is recorded
    even when the database cannot take it: then it is logged, and the original error raised."""
    step = Step({"action": action, "actor": actor, "source": source, **fields})
    try:
        yield step
    except Exception as exc:
        step.failed(describe_error(exc))
        try:
            _record_step(step)
        except DatabaseError:
            log.exception("audit entry for failed %s not recorded", action)
        raise
    _record_step(step)


def update_step(
    update: Any, action: str, *, source: str, **fields: Any
) -> AbstractContextManager[Step]:
    """``audit_step`` for an action taken on a Telegram update (``updates.Update``): by its
    sender, in its chat (unless ``chat_id`` is given), once per update."""
    fields.setdefault("chat_id", update.chat_id)
    actor = telegram_actor(update.user)
    return audit_step(action, actor=actor, source=source, update_id=update.update_id, **fields)


def _record_step(step: Step) -> None:
    detail = step.fields.pop("detail", "")
    text = "; ".join(part for part in (detail, step.detail) if part)
    step.entry = audit_record(outcome=step.outcome, detail=text, **step.fields)


def describe_error(exc: BaseException) -> str:
    """An error as the audit log shows it: what users were told, else its class and text."""
    if isinstance(exc, TelegramApiError):
        return f"Telegram: {exc.description or exc}"
    if isinstance(exc, BotError):
        return str(exc.user_message or exc)
    messages = getattr(exc, "messages", None)  # django's ValidationError
    if isinstance(messages, list) and messages:
        return " ".join(str(m) for m in messages)
    return f"{type(exc).__name__}: {exc}"


# -- the log channels ------------------------------------------------------------------------

LogChatResolver = Callable[[int], "int | None"]
_log_chat_resolvers: list[LogChatResolver] = []


def register_log_chat(resolver: LogChatResolver) -> None:
    """An app names a chat's own log channel: ``resolver(chat_id)`` -> its id, or None."""
    if resolver not in _log_chat_resolvers:
        _log_chat_resolvers.append(resolver)


def log_chats(chat_id: int | None) -> list[int]:
    """Where an entry of ``chat_id`` is posted: the chat's own log channel (the first app that
    names one) and ``AUDIT_LOG_CHAT_ID``."""
    found: list[int] = []
    if chat_id is not None:
        for resolver in _log_chat_resolvers:
            own = resolver(chat_id)
            if own:
                found.append(own)
                break
    everything = settings.AUDIT_LOG_CHAT_ID
    if everything and everything not in found:
        found.append(everything)
    return found


def _mirror(entry: AuditEntry) -> None:
    for log_chat_id in log_chats(entry.chat_id):
        job_enqueue(
            MIRROR_JOB,
            {"entry_id": entry.pk, "log_chat_id": log_chat_id},
            dedupe_key=f"auditlog:{entry.pk}:{log_chat_id}",
            kick=True,
        )


def log_line(entry: AuditEntry) -> str:
    """One line of a log channel for ``entry``."""
    who = entry.actor_name or str(entry.actor_id or "")
    whom = (
        f" {entry.target_name or entry.target_id}" if entry.target_id or entry.target_name else ""
    )
    where = gettext(" in %(chat)s") % {"chat": entry.chat_id} if entry.chat_id is not None else ""
    why = f": {entry.reason}" if entry.reason else ""
    detail = f" [{entry.detail}]" if entry.detail else ""
    outcome = "" if entry.outcome == Outcome.DONE else f" ({entry.outcome})"
    tag = entry.action.replace(".", "_")
    line = gettext("#%(action)s%(where)s%(whom)s by %(who)s") % {
        "action": tag,
        "where": where,
        "whom": whom,
        "who": who,
    }
    return f"{line}{why}{detail}{outcome}"[:4096]


def mirror(payload: dict[str, Any], client: Any) -> None:
    """The mirror job: post the entry's line. A crash after Telegram's answer and before the
    job is finished posts the line again: a log mirror prefers a repeated line to a missing
    one. A retryable error raises and the job runner retries (honouring ``retry_after``)."""
    entry = AuditEntry.objects.filter(pk=payload["entry_id"]).first()
    if entry is None:
        return
    log_chat_id = int(payload["log_chat_id"])
    with translation.override(chat_language(log_chat_id)):
        client.send_message(chat_id=log_chat_id, text=log_line(entry))
