"""The audit log: every action of an admin or moderator, recorded once.

Any app records through ``audit_record``: a Telegram command or button (with the update id, so
that a re-delivered update records nothing twice: the row is unique on update id + action),
an admin-site action (no update id: each call is one entry) or an automatic action taken for a
member's message (anti-flood, violations, the warning limit). Free text is clipped to the
column sizes, never refused: a log that fails to record is worse than a clipped reason. NUL
characters (which Telegram names may hold and PostgreSQL text cannot) are dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import IntegrityError, transaction

from telegram_bot.models import AuditEntry

Outcome = AuditEntry.Outcome
SOURCES = frozenset({"command", "button", "panel", "admin", "auto"})


@dataclass(frozen=True)
class Actor:
    """Who acted: a Telegram user (``telegram_id``), an admin-site user (``name`` only) or
    the bot itself (``Actor.BOT``, for automatic actions)."""

    telegram_id: int | None
    name: str = ""


BOT = Actor(None, "bot")


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
) -> AuditEntry | None:
    """Record one action; None when this update already recorded this action."""
    if source not in SOURCES:
        raise ValueError(f"audit source {source!r} is not one of {sorted(SOURCES)}")
    if not action or len(action) > 40:
        raise ValueError(f"audit action {action!r}: 1-40 characters")
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
    )
    if update_id is None:
        entry.save()
        return entry
    try:
        with transaction.atomic():
            entry.save()
    except IntegrityError:
        return None
    return entry


def clean(text: str, limit: int) -> str:
    """``text`` without NUL characters, clipped to ``limit``."""
    return text.replace("\x00", "")[:limit]


def audit_recorded(*, update_id: int, action: str) -> bool:
    """True when this update already recorded ``action`` (a re-delivery)."""
    return AuditEntry.objects.filter(update_id=update_id, action=action).exists()
