"""Moderation actions: the Telegram call, the audit entry, and what to answer.

Every action taken for an update is recorded once (``telegram_bot.audit``: unique on update
id + action + cause). An action whose audit entry exists is not called again: a re-delivered /ban
bans once. One message can bring about two automatic actions (it crosses the flood limit and
brings its sender to the warning limit): each has its own cause, and the second is taken only
where it is stronger than what Telegram says the member has (a ban is never turned into a
mute, a longer mute never into a shorter one). A crash between Telegram's answer and the audit
commit leaves at most a repeated call, and these calls are idempotent (banning a banned member
changes nothing). Warnings are
rows written in the same transaction as their audit entry, under a per-member row lock, so a
re-delivered /warn never warns twice and two moderators at the limit trigger one action.
Flood control (429) and other retryable Telegram errors hand the action to a job
(``moderation.act``) that runs it when Telegram allows, and records it then.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext, gettext_lazy, ngettext

from moderation.conf import chat_settings
from moderation.durations import describe
from moderation.models import Action, ChatSettings, Warning, WarnState
from telegram_bot.admins import banned_for_longer_than
from telegram_bot.audit import BOT, Actor, Outcome, audit_record, clean
from telegram_bot.client import SEND_PERMISSIONS, TelegramClient
from telegram_bot.errors import TelegramApiError
from telegram_bot.jobs.models import Job
from telegram_bot.jobs.services import job_enqueue, job_retry_later
from telegram_bot.models import AuditEntry
from telegram_bot.numbers import ascii_int

log = logging.getLogger(__name__)
JOB_KIND = "moderation.act"
MUTED = {"can_send_messages": False}
UNMUTED = dict.fromkeys((*SEND_PERMISSIONS, "can_react_to_messages"), True)
PAST = {
    "mute": gettext_lazy("muted"),
    "unmute": gettext_lazy("unmuted"),
    "ban": gettext_lazy("banned"),
    "unban": gettext_lazy("unbanned"),
    "kick": gettext_lazy("kicked"),
}
KICK_SECONDS = 60  # a kick is a ban this short (Telegram rounds it up to 30 s), then an unban


@dataclass(frozen=True)
class Target:
    user_id: int
    name: str = ""
    username: str = ""

    @property
    def label(self) -> str:
        return self.name or (f"@{self.username}" if self.username else str(self.user_id))


@dataclass(frozen=True)
class Origin:
    """Where an action comes from: chat, who, how, and the update (None outside updates)."""

    chat_id: int
    actor: Actor
    source: str
    update_id: int | None = None
    cause: str = ""  # an automatic action's: flood, violation, warn_limit


def telegram_apply(
    client: TelegramClient, action: str, chat_id: int, user_id: int, seconds: int | None
) -> None:
    """The Telegram calls of ``action`` (each idempotent)."""
    until = int(time.time()) + seconds if seconds else None
    if action == Action.MUTE:
        client.restrict_chat_member(
            chat_id=chat_id,
            user_id=user_id,
            permissions=MUTED,
            until_date=until,
            use_independent_chat_permissions=True,
        )
    elif action == "unmute":
        client.restrict_chat_member(
            chat_id=chat_id,
            user_id=user_id,
            permissions=UNMUTED,
            use_independent_chat_permissions=True,
        )
    elif action == Action.BAN:
        client.ban_chat_member(chat_id=chat_id, user_id=user_id, until_date=until)
    elif action == "unban":
        client.unban_chat_member(chat_id=chat_id, user_id=user_id, only_if_banned=True)
    elif action == Action.KICK:
        client.ban_chat_member(
            chat_id=chat_id, user_id=user_id, until_date=int(time.time()) + KICK_SECONDS
        )
        client.unban_chat_member(chat_id=chat_id, user_id=user_id, only_if_banned=True)
    else:
        raise ValueError(f"unknown moderation action {action!r}")


def already_done(update_id: int | None, action: str, cause: str = "") -> bool:
    if update_id is None:
        return False
    return AuditEntry.objects.filter(
        update_id=update_id, action=action, cause=cause, outcome=Outcome.DONE
    ).exists()


# What became of a deletion (``delete_once``).
DELETED, QUEUED, GONE, REFUSED = "deleted", "queued", "gone", "refused"


def delete_once(
    client: TelegramClient,
    chat_id: int,
    message_id: int,
    *,
    retry: Callable[[TelegramApiError], object],
    record: Callable[[str, str], object],
    in_job: bool = False,
) -> tuple[str, TelegramApiError | None]:
    """Delete a message a rule or a report condemned: ``record(outcome, note)`` audits what
    happened ("message to delete not found" counts as done); a retryable refusal goes to
    ``retry`` (raised inside the retry job, whose runner retries). Returns what became of it
    and Telegram's refusal, if any."""
    try:
        client.delete_message(chat_id=chat_id, message_id=message_id)
    except TelegramApiError as exc:
        if exc.retryable and in_job:
            raise
        if exc.retryable:
            retry(exc)
            return QUEUED, exc
        gone = "message to delete not found" in exc.description.lower()
        record(Outcome.DONE if gone else Outcome.FAILED, exc.description)
        return (GONE if gone else REFUSED), exc
    record(Outcome.DONE, "after retry" if in_job else "")
    return DELETED, None


PENALTIES = (Action.MUTE, Action.BAN, Action.KICK)


def stronger_in_place(
    client: TelegramClient, origin: Origin, action: str, user_id: int, seconds: int | None
) -> str | None:
    """For an automatic action of an update that already penalized this member for another
    cause, or of a warning limit: the action the member is under when it is at least as strong
    as ``action`` (a ban outranks a mute or a kick, a longer or endless one a shorter one), so
    this one is skipped; for a moderator's mute or kick: ``ban`` when the member is banned;
    else None. Telegram's own record decides, so a re-delivery judges as the first delivery
    did, and a ban is never replaced by a mute or lifted by a kick (restricting a banned user
    lifts the ban; a kick ends with an unban)."""
    automatic = origin.update_id is not None and bool(origin.cause)
    if action not in PENALTIES or (not automatic and action == Action.BAN):
        return None  # a moderator's ban sets the ban it names
    if automatic and origin.cause != "warn_limit":
        earlier = AuditEntry.objects.filter(
            update_id=origin.update_id,
            target_id=user_id,
            source="auto",
            outcome=Outcome.DONE,
            action__in=PENALTIES,
        ).exclude(cause=origin.cause)
        if not earlier.exists():
            return None
    # A moderator's mute or kick, or a warning limit's action (a /warn of a banned member),
    # on a member already banned would lift the ban: Telegram's record is asked first.
    member = client.get_chat_member(chat_id=origin.chat_id, user_id=user_id)
    status, until = member.get("status"), member.get("until_date")
    until = until if isinstance(until, int) and not isinstance(until, bool) else 0
    # until_date 0 is for ever; an action without seconds is for ever too.
    lasts = not until or (seconds is not None and seconds > 0 and until >= time.time() + seconds)
    if not automatic:
        # A ban for ever or for longer than a kick's own minute (a kick whose unban is still
        # to come, its job retrying, is no ban to keep); a moderator's mute may change the
        # length of a mute in place.
        return Action.BAN if banned_for_longer_than(member, 2 * KICK_SECONDS) else None
    if status == "kicked" and (action != Action.BAN or lasts):
        return Action.BAN
    if status == "restricted" and action == Action.MUTE and not member.get("can_send_messages"):
        return Action.MUTE if lasts else None
    return None


def penalize(
    client: TelegramClient,
    *,
    origin: Origin,
    action: str,
    target: Target,
    seconds: int | None = None,
    reason: str = "",
) -> str:
    """Mute, unmute, ban, unban or kick ``target``; the one-line answer."""
    done = _done_text(action, target, seconds, reason)
    if already_done(origin.update_id, action, origin.cause):
        return done
    try:
        held = stronger_in_place(client, origin, action, target.user_id, seconds)
        if held is not None:
            _record(origin, action, target, reason, Outcome.REFUSED, f"already {held}")
            return gettext("%(name)s is already %(done)s.") % {
                "name": target.label,
                "done": PAST[held],
            }
        telegram_apply(client, action, origin.chat_id, target.user_id, seconds)
    except TelegramApiError as exc:
        if exc.retryable:
            return _retry_later(origin, action, target, seconds, reason, exc)
        _record(origin, action, target, reason, Outcome.FAILED, exc.description)
        return explain(exc, target)
    _record(origin, action, target, reason, Outcome.DONE, describe(seconds) if seconds else "")
    return done


def perform_job(payload: dict[str, Any], client: TelegramClient) -> None:
    """The ``moderation.act`` job: the action handed over after a retryable error."""
    origin = Origin(
        chat_id=int(payload["chat_id"]),
        actor=Actor(payload.get("actor_id"), str(payload.get("actor_name", ""))),
        source=str(payload["source"]),
        update_id=payload.get("update_id"),
        cause=str(payload.get("cause", "")),
    )
    action = str(payload["action"])
    target = Target(int(payload["user_id"]), str(payload.get("name", "")))
    if already_done(origin.update_id, action, origin.cause):
        return
    reason = str(payload.get("reason", ""))
    # A retryable error raises here and the job runner retries it (honouring retry_after); a
    # refusal is recorded (an action asked for in the console has no other answer) and raised.
    try:
        held = stronger_in_place(client, origin, action, target.user_id, payload.get("seconds"))
        if held is not None:
            _record(origin, action, target, reason, Outcome.REFUSED, f"already {held}")
            return
        telegram_apply(client, action, origin.chat_id, target.user_id, payload.get("seconds"))
    except TelegramApiError as exc:
        if not exc.retryable:
            _record(origin, action, target, reason, Outcome.FAILED, exc.description)
        raise
    # Handed over after an error, or queued from the console (its detail: the duration).
    _record(origin, action, target, reason, Outcome.DONE, str(payload.get("detail", "after retry")))


def penalize_queued(
    *, origin: Origin, action: str, target: Target, seconds: int | None = None, reason: str = ""
) -> Job:
    """Queue ``action`` on ``target`` as a ``moderation.act`` job (the web console's way: no
    Telegram call inside a web request). The job takes it as ``penalize`` would and records
    it, done, refused or failed, with ``origin``'s actor."""
    if action not in PAST:
        raise ValueError(f"unknown moderation action {action!r}")
    payload = _job_payload(origin, action, target, seconds, reason)
    payload["detail"] = describe(seconds) if seconds else ""
    return job_enqueue(JOB_KIND, payload, kick=True)


def _retry_later(
    origin: Origin,
    action: str,
    target: Target,
    seconds: int | None,
    reason: str,
    exc: TelegramApiError,
) -> str:
    payload = _job_payload(origin, action, target, seconds, reason)
    key = f"mod:{origin.chat_id}:{origin.update_id or time.time_ns()}:{action}:{target.user_id}"
    key += f":{origin.cause}" if origin.cause else ""
    job_retry_later(JOB_KIND, payload, dedupe_key=key, error=exc)
    if exc.retry_after:
        wait = gettext(" in %(seconds)ds") % {"seconds": int(exc.retry_after)}
    else:
        wait = gettext(" shortly")
    return gettext("Telegram asks me to slow down: %(name)s will be %(done)s%(wait)s.") % {
        "name": target.label,
        "done": PAST[action],
        "wait": wait,
    }


def _job_payload(
    origin: Origin, action: str, target: Target, seconds: int | None, reason: str
) -> dict[str, Any]:
    return {
        "chat_id": origin.chat_id,
        "actor_id": origin.actor.telegram_id,
        "actor_name": origin.actor.name,
        "source": origin.source,
        "update_id": origin.update_id,
        "cause": origin.cause,
        "action": action,
        "user_id": target.user_id,
        "name": target.label,
        "seconds": seconds,
        "reason": reason,
    }


def record(**fields: Any) -> AuditEntry | None:
    """``audit_record`` (which also mirrors the entry to the chat's log channel)."""
    return audit_record(**fields)


def _record(
    origin: Origin, action: str, target: Target, reason: str, outcome: str, detail: str
) -> None:
    record(
        action=action,
        actor=origin.actor,
        source=origin.source,
        chat_id=origin.chat_id,
        target_id=target.user_id,
        target_name=target.label,
        reason=reason,
        outcome=outcome,
        detail=detail,
        update_id=origin.update_id,
        cause=origin.cause,
    )


def _done_text(action: str, target: Target, seconds: int | None, reason: str) -> str:
    sentences = {
        "mute": gettext("%(name)s is muted %(duration)s"),
        "unmute": gettext("%(name)s is unmuted"),
        "ban": gettext("%(name)s is banned %(duration)s"),
        "unban": gettext("%(name)s is unbanned"),
        "kick": gettext("%(name)s is kicked"),
    }
    text = sentences[action] % {"name": target.label, "duration": describe(seconds)}
    return text + (f": {reason}" if reason else ".")


def explain(exc: TelegramApiError, target: Target | None = None) -> str:
    """A Telegram refusal as one plain line."""
    text = exc.description.lower()
    who = target.label if target else gettext("That user")
    if "not enough rights" in text or "have no rights" in text:
        return gettext("I lack the right to do that here: an owner can grant it.")
    if "user is an administrator" in text:
        return gettext("%(name)s is an admin; I can't do that.") % {"name": who}
    if "can't remove chat owner" in text or "chat owner" in text:
        return gettext("%(name)s is the chat's owner.") % {"name": who}
    if "user not found" in text or "participant_id_invalid" in text or "user_id_invalid" in text:
        return gettext("I can't find that user in this chat.")
    if "message can't be deleted" in text:
        return gettext(
            "That message can't be deleted: it is older than 48 hours, or I lack the right."
        )
    if "message to delete not found" in text:
        return gettext("That message is already gone.")
    if "only for supergroups" in text:
        return gettext("That works only in supergroups.")
    return gettext("Telegram refused: %(error)s") % {"error": exc.description[:200]}


# -- warnings -------------------------------------------------------------------------------


@dataclass(frozen=True)
class WarnResult:
    count: int
    limit: int
    triggered: bool


def warn(
    *,
    origin: Origin,
    target: Target,
    reason: str,
    settings: ChatSettings,
) -> WarnResult:
    """Give a warning (once per update). At the chat's limit the active warnings are spent
    and ``triggered`` is True for exactly one warning, however many moderators warn at once."""
    now = timezone.now()
    with transaction.atomic():
        state, _ = WarnState.objects.get_or_create(
            chat_id=origin.chat_id,
            user_id=target.user_id,
            defaults={"name": clean(target.name, 200), "username": clean(target.username, 64)},
        )
        # The lock that serialises warnings of this member (PostgreSQL; SQLite's IMMEDIATE
        # transactions serialise every writer anyway).
        WarnState.objects.select_for_update().filter(pk=state.pk).first()
        _learn_name(state, target)
        if origin.update_id is not None:
            existing = Warning.objects.filter(update_id=origin.update_id).first()
            if existing is not None:
                return WarnResult(
                    _active(origin.chat_id, target.user_id, now).count(),
                    settings.warn_limit,
                    existing.triggered,
                )
        warning = Warning.objects.create(
            chat_id=origin.chat_id,
            user_id=target.user_id,
            moderator_id=origin.actor.telegram_id,
            reason=clean(reason, 300),
            expires_at=now + timedelta(days=settings.warn_expiry_days),
            update_id=origin.update_id,
        )
        active = _active(origin.chat_id, target.user_id, now)
        count = active.count()
        triggered = count >= settings.warn_limit
        if triggered:
            active.update(spent=True)
            Warning.objects.filter(pk=warning.pk).update(triggered=True)
        _record(origin, "warn", target, reason, Outcome.DONE, f"{count}/{settings.warn_limit}")
    return WarnResult(count, settings.warn_limit, triggered)


def warn_and_act(client: TelegramClient, origin: Origin, target: Target, reason: str) -> str:
    """Warn; at the chat's limit also take the chat's action (once)."""
    settings = chat_settings(origin.chat_id)
    result = warn(origin=origin, target=target, reason=reason, settings=settings)
    text = gettext("%(name)s is warned (%(count)s/%(limit)s)") % {
        "name": target.label,
        "count": result.count,
        "limit": result.limit,
    }
    text += f": {reason}" if reason else "."
    if result.triggered:
        auto = Origin(origin.chat_id, BOT, "auto", origin.update_id, cause="warn_limit")
        text += " " + penalize(
            client,
            origin=auto,
            action=settings.warn_action,
            target=target,
            seconds=settings.warn_action_seconds,
            reason=ngettext("%(count)d warning", "%(count)d warnings", result.limit)
            % {"count": result.limit},
        )
    return text


def warn_and_queue(*, origin: Origin, target: Target, reason: str) -> WarnResult:
    """Warn from the web console; at the chat's limit the chat's action is queued
    (``penalize_queued``) rather than called in the web request."""
    settings = chat_settings(origin.chat_id)
    result = warn(origin=origin, target=target, reason=reason, settings=settings)
    if result.triggered:
        penalize_queued(
            origin=Origin(origin.chat_id, BOT, "auto", None, cause="warn_limit"),
            action=settings.warn_action,
            target=target,
            seconds=settings.warn_action_seconds,
            reason=ngettext("%(count)d warning", "%(count)d warnings", result.limit)
            % {"count": result.limit},
        )
    return result


def unwarn(*, origin: Origin, target: Target) -> bool:
    """Revoke the member's latest active warning; False when there was none (or this update
    revoked one already)."""
    now = timezone.now()
    try:
        with transaction.atomic():
            # The member's row lock, as ``warn`` takes it: two /unwarn at once each revoke
            # their own warning (both read the same latest one and were both told "removed").
            WarnState.objects.select_for_update().filter(
                chat_id=origin.chat_id, user_id=target.user_id
            ).first()
            latest = _active(origin.chat_id, target.user_id, now).first()
            if latest is None:
                return False
            Warning.objects.filter(pk=latest.pk).update(revoked=True)
            entry = record(
                action="unwarn",
                actor=origin.actor,
                source=origin.source,
                chat_id=origin.chat_id,
                target_id=target.user_id,
                target_name=target.label,
                update_id=origin.update_id,
            )
            if entry is None:
                raise _AlreadyDone
    except _AlreadyDone:
        return True
    return True


def resetwarns(*, origin: Origin, target: Target) -> int:
    """Revoke every active warning of the member (/resetwarns); how many. A re-delivery of the
    same update revokes nothing again (its audit entry exists: rolled back, 0)."""
    now = timezone.now()
    try:
        with transaction.atomic():
            WarnState.objects.select_for_update().filter(
                chat_id=origin.chat_id, user_id=target.user_id
            ).first()
            count = _active(origin.chat_id, target.user_id, now).update(revoked=True)
            if not count:
                return 0
            entry = record(
                action="resetwarns",
                actor=origin.actor,
                source=origin.source,
                chat_id=origin.chat_id,
                target_id=target.user_id,
                target_name=target.label,
                detail=f"{count} warning(s)",
                update_id=origin.update_id,
            )
            if entry is None:
                raise _AlreadyDone
    except _AlreadyDone:
        return 0
    return count


class _AlreadyDone(Exception):
    """Rolls back a revocation that this update made before (a re-delivery)."""


def warnings_of(chat_id: int, user_id: int) -> list[Warning]:
    return list(_active(chat_id, user_id, timezone.now()))


def _active(chat_id: int, user_id: int, now: Any) -> Any:
    return Warning.objects.filter(
        chat_id=chat_id, user_id=user_id, revoked=False, spent=False, expires_at__gt=now
    ).order_by("-created_at", "-id")


def _learn_name(state: WarnState, target: Target) -> None:
    """Keep the member's current name and @username (a target from a reply or a mention
    carries them; one given by id carries neither): ``known_username`` resolves @names from
    these rows, and a name given up and taken by someone else must not lead to the member
    who had it before."""
    if not target.name:
        return
    name, username = clean(target.name, 200), clean(target.username, 64)
    if (state.name, state.username) == (name, username):
        return
    if username:
        WarnState.objects.filter(chat_id=state.chat_id, username__iexact=username).exclude(
            pk=state.pk
        ).update(username="")
    WarnState.objects.filter(pk=state.pk).update(name=name, username=username)


def known_username(chat_id: int, username: str) -> Target | None:
    """A member of the chat we have moderated before, by @username (the bot keeps no member
    directory: a username it never saw must be given as a reply or an id)."""
    state = (
        WarnState.objects.filter(chat_id=chat_id, username__iexact=username).order_by("-id").first()
    )
    if state is None:
        return None
    return Target(state.user_id, state.name, state.username)


# -- settings -------------------------------------------------------------------------------

VIOLATION_CYCLE = (Action.NONE, Action.DELETE, Action.WARN, Action.MUTE, Action.BAN)
# The panel's buttons carry the value they set, never "the next one": a press on an older copy
# of the page (another admin's, or a double tap) sets what its label says again instead of
# turning it back. ``field``: "flood" ("on"/"off"), "warn" (the limit), or a severity.
PANEL_FIELDS = ("flood", "warn", "low", "medium", "high")
WARN_LIMIT_MAX = 20  # as ChatSettings.warn_limit's validator


def settings_for_edit(chat_id: int) -> ChatSettings:
    return ChatSettings.objects.filter(chat_id=chat_id).first() or ChatSettings(chat_id=chat_id)


def settings_set(
    *, chat_id: int, field: str, value: str, actor: Actor, update_id: int | None = None
) -> ChatSettings:
    """One panel button: anti-flood on/off, the warning limit, a severity's action, set to
    ``value``. Validated like the admin site's form (``full_clean``) and recorded in the audit
    log when it changed something; a re-delivered press changes nothing again. ValueError for
    a field or value no button carries."""
    new = _panel_value(field, value)
    with transaction.atomic():
        row, _ = ChatSettings.objects.select_for_update().get_or_create(chat_id=chat_id)
        if update_id is not None and already_done(update_id, "settings"):
            return row
        if field == "flood":
            # On keeps the chat's action when it has one (the admin site may have set a ban).
            name = "flood_action"
            if new == Action.MUTE and row.flood_action != Action.NONE:
                new = row.flood_action
        else:
            name = "warn_limit" if field == "warn" else f"violation_{field}"
        if getattr(row, name) == new:
            return row  # already what the button says: a second press, an older copy
        setattr(row, name, new)
        row.full_clean()
        row.save()
        audit_settings(
            row, actor=actor, source="panel", changes=f"{name}={new}", update_id=update_id
        )
    return row


WARN_SETTINGS = ("warn_limit", "warn_action", "warn_action_seconds", "warn_expiry_days")


def warn_settings_set(
    *, chat_id: int, values: dict[str, Any], actor: Actor, update_id: int | None = None
) -> ChatSettings:
    """Set warning settings of a chat from a command (/warnlimit, /warnmode, /warntime):
    validated like the admin site's form (``full_clean``: ValidationError on a bad value),
    recorded in the audit log once per update when it changed something."""
    if not set(values) <= set(WARN_SETTINGS):
        raise ValueError(f"not a warning setting: {sorted(set(values) - set(WARN_SETTINGS))}")
    with transaction.atomic():
        row, _ = ChatSettings.objects.select_for_update().get_or_create(chat_id=chat_id)
        if update_id is not None and already_done(update_id, "settings"):
            return row
        changed = {name: value for name, value in values.items() if getattr(row, name) != value}
        if not changed:
            return row
        for name, value in changed.items():
            setattr(row, name, value)
        row.full_clean()
        row.save()
        audit_settings(
            row,
            actor=actor,
            source="command",
            changes=", ".join(f"{name}={value}" for name, value in changed.items()),
            update_id=update_id,
        )
    return row


def _panel_value(field: str, value: str) -> str | int:
    if field == "flood" and value in ("on", "off"):
        return Action.MUTE if value == "on" else Action.NONE
    limit = ascii_int(value, digits=2) if field == "warn" else None
    if limit is not None and 1 <= limit <= WARN_LIMIT_MAX:
        return limit
    if field in ("low", "medium", "high") and value in VIOLATION_CYCLE:
        return Action(value)
    raise ValueError(f"not a panel setting: {field[:16]!r}={value[:16]!r}")


def audit_settings(
    row: ChatSettings, *, actor: Actor, source: str, changes: str, update_id: int | None = None
) -> None:
    record(
        update_id=update_id,
        action="settings",
        actor=actor,
        source=source,
        chat_id=row.chat_id,
        detail=changes,
        outcome=Outcome.DONE,
    )


def known_chats(limit: int = 20) -> list[int]:
    """Chats to offer in the panel: those with settings, then those moderated before."""
    chats = list(ChatSettings.objects.values_list("chat_id", flat=True)[:limit])
    seen = (
        AuditEntry.objects.filter(chat_id__lt=0)
        .exclude(chat_id__in=chats)
        .values_list("chat_id", flat=True)
        .distinct()[: max(0, limit - len(chats))]
    )
    return chats + [chat for chat in seen if chat is not None]
