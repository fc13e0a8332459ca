"""Writes of a chat's rules (each change audited once per update) and what a broken rule does.

Changes: ``lock_set``/``lock_remove``, ``domain_add``/``domain_remove``,
``blocklist_add``/``blocklist_remove``, ``approve``/``unapprove``. Each is one row written with
its audit entry in one transaction; a re-delivered command finds its audit entry and changes
nothing again. The chat's compiled rules are dropped in this process at once
(``matcher.forget``).

Enforcement (``rule_enforce``): the message is deleted, then its author warned, muted or banned
through moderation's services (the same idempotency: one action per update and cause, audited
with the rule that fired in the reason and the detail). A deletion that Telegram asks to retry
goes to a ``rules.delete`` job with the retry policy.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _

from moderation import services as moderation
from moderation.models import Action
from moderation.rules import kinds, matcher
from moderation.rules.matcher import Verdict
from moderation.rules.models import AllowedDomain, Approval, BlocklistEntry, Filter, Lock, Note
from moderation.rules.replies import Content
from moderation.services import Origin, Target
from telegram_bot.audit import BOT, Actor, audit_record, clean
from telegram_bot.client import TelegramClient
from telegram_bot.jobs.services import job_retry_later

log = logging.getLogger(__name__)
DELETE_JOB = "rules.delete"
MAX_BLOCKLIST = 500  # entries per chat
MAX_DOMAINS = 200


@dataclass(frozen=True)
class Change:
    """Who changes a chat's rules, where, and for which update (None outside updates)."""

    chat_id: int
    actor: Actor
    source: str = "command"
    update_id: int | None = None


class _AlreadyDone(Exception):
    """Rolls back a change this update made before (a re-delivery)."""


def _audited(change: Change, action: str, detail: str, target: Target | None = None) -> None:
    """Record ``action``; raises _AlreadyDone when this update recorded it before."""
    entry = audit_record(
        action=action,
        actor=change.actor,
        source=change.source,
        chat_id=change.chat_id,
        target_id=target.user_id if target else None,
        target_name=target.label if target else "",
        detail=detail,
        update_id=change.update_id,
    )
    if entry is None:
        raise _AlreadyDone


def _write(
    change: Change, action: str, detail: str, work: Any, target: Target | None = None
) -> bool:
    """Run ``work()`` (the row's write; True when it changed something) with its audit entry,
    in one transaction; False when nothing changed or this update did it before."""
    try:
        with transaction.atomic():
            if not work():
                return False
            _audited(change, action, detail, target)
    except _AlreadyDone:
        return False
    finally:
        matcher.forget(change.chat_id)
    return True


# -- locks ------------------------------------------------------------------------------------


def lock_set(change: Change, *, kinds: list[str], action: str, seconds: int | None) -> bool:
    """Lock each of ``kinds`` with ``action`` (and its duration); False when they were so
    already."""

    def work() -> bool:
        changed = False
        for kind in kinds:
            row, created = Lock.objects.select_for_update().get_or_create(
                chat_id=change.chat_id,
                kind=kind,
                defaults={
                    "action": action,
                    "seconds": seconds,
                    "created_by": change.actor.telegram_id,
                },
            )
            if not created and (row.action, row.seconds) != (action, seconds):
                Lock.objects.filter(pk=row.pk).update(action=action, seconds=seconds)
                created = True
            changed = changed or created
        return changed

    detail = f"{', '.join(kinds)}: {_described(action, seconds)}"
    return _write(change, "rules.lock", detail, work)


def lock_message_set(change: Change, *, kind: str, message: str) -> bool:
    """What a lock says when it deletes a message (empty: nothing); False when ``kind`` is not
    locked or said that already."""

    def work() -> bool:
        row = Lock.objects.select_for_update().filter(chat_id=change.chat_id, kind=kind).first()
        if row is None or row.message == message:
            return False
        Lock.objects.filter(pk=row.pk).update(message=message)
        return True

    detail = f"{kind}: {message}" if message else f"{kind}: no message"
    return _write(change, "rules.lock_message", detail, work)


def lock_remove(change: Change, *, kinds: list[str]) -> list[str]:
    """Lift the locks of ``kinds``; those that were on."""
    removed: list[str] = []

    def work() -> bool:
        for kind in kinds:
            if Lock.objects.filter(chat_id=change.chat_id, kind=kind).delete()[0]:
                removed.append(kind)
        return bool(removed)

    return removed if _write(change, "rules.unlock", ", ".join(kinds), work) else []


def domain_add(change: Change, *, domains: list[str]) -> bool:
    def work() -> bool:
        added = False
        for domain in domains:
            if AllowedDomain.objects.filter(chat_id=change.chat_id).count() >= MAX_DOMAINS:
                raise RulesError(_("At most %(count)s domains.") % {"count": MAX_DOMAINS})
            _row, created = AllowedDomain.objects.get_or_create(
                chat_id=change.chat_id,
                domain=domain,
                defaults={"created_by": change.actor.telegram_id},
            )
            added = added or created
        return added

    return _write(change, "rules.allow", ", ".join(domains), work)


def domain_remove(change: Change, *, domains: list[str]) -> list[str]:
    removed: list[str] = []

    def work() -> bool:
        for domain in domains:
            rows = AllowedDomain.objects.filter(chat_id=change.chat_id, domain=domain)
            if rows.delete()[0]:
                removed.append(domain)
        return bool(removed)

    return removed if _write(change, "rules.disallow", ", ".join(domains), work) else []


# -- blocklist --------------------------------------------------------------------------------


def blocklist_add(change: Change, *, pattern: str, action: str, seconds: int | None) -> bool:
    """Add ``pattern`` (normalised already: ``blocklist.normalise``) or change its action."""

    def work() -> bool:
        row = (
            BlocklistEntry.objects.select_for_update()
            .filter(chat_id=change.chat_id, pattern=pattern)
            .first()
        )
        if row is None:
            if BlocklistEntry.objects.filter(chat_id=change.chat_id).count() >= MAX_BLOCKLIST:
                raise RulesError(
                    _("At most %(count)s blocklist entries.") % {"count": MAX_BLOCKLIST}
                )
            try:
                with transaction.atomic():
                    BlocklistEntry.objects.create(
                        chat_id=change.chat_id,
                        pattern=pattern,
                        action=action,
                        seconds=seconds,
                        created_by=change.actor.telegram_id,
                    )
            except IntegrityError:  # added at the same moment by another admin
                return False
            return True
        if (row.action, row.seconds) == (action, seconds):
            return False
        BlocklistEntry.objects.filter(pk=row.pk).update(action=action, seconds=seconds)
        return True

    return _write(change, "rules.blocklist", f"{pattern}: {_described(action, seconds)}", work)


def blocklist_remove(change: Change, *, pattern: str) -> bool:
    def work() -> bool:
        rows = BlocklistEntry.objects.filter(chat_id=change.chat_id, pattern=pattern)
        return rows.delete()[0] > 0

    return _write(change, "rules.unblocklist", pattern, work)


# -- approvals --------------------------------------------------------------------------------


def approve(change: Change, *, target: Target) -> bool:
    def work() -> bool:
        _row, created = Approval.objects.get_or_create(
            chat_id=change.chat_id,
            user_id=target.user_id,
            defaults={"name": clean(target.label, 200), "approved_by": change.actor.telegram_id},
        )
        return created

    return _write(change, "rules.approve", "", work, target)


def unapprove(change: Change, *, target: Target) -> bool:
    def work() -> bool:
        rows = Approval.objects.filter(chat_id=change.chat_id, user_id=target.user_id)
        return rows.delete()[0] > 0

    return _write(change, "rules.unapprove", "", work, target)


# -- notes and filters -------------------------------------------------------------------------

MAX_NOTES = 200
MAX_FILTERS = 200


def note_save(change: Change, *, name: str, content: Content, admin_only: bool) -> bool:
    """Save (or replace) the note ``name``; True when it is new."""
    created = False

    def work() -> bool:
        nonlocal created
        if (
            not Note.objects.filter(chat_id=change.chat_id, name=name).exists()
            and Note.objects.filter(chat_id=change.chat_id).count() >= MAX_NOTES
        ):
            raise RulesError(_("At most %(count)s notes.") % {"count": MAX_NOTES})
        _row, created = Note.objects.update_or_create(
            chat_id=change.chat_id,
            name=name,
            defaults={**_fields(content, change), "admin_only": admin_only},
        )
        return True

    _write(change, "rules.note", name, work)
    return created


def note_clear(change: Change, *, name: str) -> bool:
    def work() -> bool:
        return Note.objects.filter(chat_id=change.chat_id, name=name).delete()[0] > 0

    return _write(change, "rules.clear", name, work)


def filter_save(change: Change, *, keyword: str, content: Content) -> bool:
    """Save (or replace) the filter of ``keyword`` (normalised: ``blocklist.normalise``)."""
    created = False

    def work() -> bool:
        nonlocal created
        if (
            not Filter.objects.filter(chat_id=change.chat_id, keyword=keyword).exists()
            and Filter.objects.filter(chat_id=change.chat_id).count() >= MAX_FILTERS
        ):
            raise RulesError(_("At most %(count)s filters.") % {"count": MAX_FILTERS})
        _row, created = Filter.objects.update_or_create(
            chat_id=change.chat_id, keyword=keyword, defaults=_fields(content, change)
        )
        return True

    _write(change, "rules.filter", keyword, work)
    return created


def filter_stop(change: Change, *, keyword: str) -> bool:
    def work() -> bool:
        return Filter.objects.filter(chat_id=change.chat_id, keyword=keyword).delete()[0] > 0

    return _write(change, "rules.stop", keyword, work)


def _fields(content: Content, change: Change) -> dict[str, Any]:
    return {
        "text": content.text,
        "buttons": content.buttons,
        "media_kind": content.media_kind,
        "file_id": content.file_id,
        "created_by": change.actor.telegram_id,
    }


class RulesError(Exception):
    """A change refused with a one-line answer (nothing was changed)."""


def _described(action: str, seconds: int | None) -> str:
    return f"{action} {seconds}s" if seconds else action


# -- enforcement ------------------------------------------------------------------------------


def rule_reason(verdict: Verdict) -> str:
    """What the member is told and the audit log keeps as the reason: the rule that fired."""
    kind, _sep, name = verdict.rule.partition(":")
    if kind == "lock":
        return _("locked: %(kind)s") % {"kind": kinds.label(name)}
    return _("blocked word: %(pattern)s") % {"pattern": name}


def rule_enforce(
    client: TelegramClient,
    *,
    chat_id: int,
    update_id: int | None,
    message_id: int,
    target: Target,
    verdict: Verdict,
) -> str:
    """Delete the message that broke ``verdict``'s rule and take its action on ``target``;
    the one-line answer for the chat ("" after a deletion alone)."""
    reason = rule_reason(verdict)
    origin = Origin(chat_id, BOT, "auto", update_id, cause=verdict.cause)
    answer = _delete(client, origin, target, message_id, verdict, reason)
    if verdict.action == Action.DELETE:
        return answer
    if verdict.action == Action.WARN:
        return moderation.warn_and_act(client, origin, target, reason)
    return moderation.penalize(
        client,
        origin=origin,
        action=verdict.action,
        target=target,
        seconds=verdict.seconds,
        reason=reason,
    )


def _delete(
    client: TelegramClient,
    origin: Origin,
    target: Target,
    message_id: int,
    verdict: Verdict,
    reason: str,
) -> str:
    if moderation.already_done(origin.update_id, "delete", origin.cause):
        return ""
    payload = _delete_payload(origin, target, message_id, verdict, reason)
    key = f"rules:{origin.chat_id}:{message_id}:{origin.update_id}"
    status, refusal = moderation.delete_once(
        client,
        origin.chat_id,
        message_id,
        retry=lambda exc: job_retry_later(DELETE_JOB, payload, dedupe_key=key, error=exc),
        record=lambda outcome, note: _record_delete(
            origin, target, message_id, verdict, reason, outcome, note
        ),
    )
    if status == moderation.REFUSED and refusal is not None:
        return moderation.explain(refusal, target)
    return ""


def _delete_payload(
    origin: Origin, target: Target, message_id: int, verdict: Verdict, reason: str
) -> dict[str, Any]:
    return {
        "chat_id": origin.chat_id,
        "update_id": origin.update_id,
        "message_id": message_id,
        "user_id": target.user_id,
        "name": target.label,
        "cause": verdict.cause,
        "rule": verdict.rule,
        "action": verdict.action,
        "seconds": verdict.seconds,
        "reason": reason,
    }


def delete_job(payload: dict[str, Any], client: TelegramClient) -> None:
    """The ``rules.delete`` job: a deletion Telegram asked to retry (a retryable error raises
    and the job runner retries it)."""
    origin = Origin(
        int(payload["chat_id"]), BOT, "auto", payload.get("update_id"), str(payload["cause"])
    )
    if moderation.already_done(origin.update_id, "delete", origin.cause):
        return
    target = Target(int(payload["user_id"]), str(payload.get("name", "")))
    verdict = Verdict(
        origin.cause, str(payload["rule"]), str(payload["action"]), payload.get("seconds")
    )
    message_id = int(payload["message_id"])
    reason = str(payload.get("reason", ""))
    moderation.delete_once(
        client,
        origin.chat_id,
        message_id,
        retry=lambda exc: None,  # never called in the job: the refusal is raised
        record=lambda outcome, note: _record_delete(
            origin, target, message_id, verdict, reason, outcome, note
        ),
        in_job=True,
    )


def _record_delete(
    origin: Origin,
    target: Target,
    message_id: int,
    verdict: Verdict,
    reason: str,
    outcome: str,
    note: str,
) -> None:
    detail = f"rule {verdict.rule}; message #{message_id}"
    audit_record(
        action="delete",
        actor=BOT,
        source="auto",
        chat_id=origin.chat_id,
        target_id=target.user_id,
        target_name=target.label,
        reason=reason,
        outcome=outcome,
        detail=f"{detail}; {note}" if note else detail,
        update_id=origin.update_id,
        cause=origin.cause,
    )


def bots_kick(
    client: TelegramClient, *, chat_id: int, update_id: int | None, bots: list[Target]
) -> str:
    """The ``bots`` lock: remove the bots a member added (each audited with the rule)."""
    answers = []
    for index, bot in enumerate(bots[:5]):
        cause = "lock" if index == 0 else f"lock.{index}"  # one audit entry per bot
        origin = Origin(chat_id, BOT, "auto", update_id, cause=cause)
        answers.append(
            moderation.penalize(
                client,
                origin=origin,
                action=Action.KICK,
                target=bot,
                reason=_("locked: %(kind)s") % {"kind": kinds.label("bots")},
            )
        )
    return " ".join(answers)
