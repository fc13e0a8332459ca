"""The core's personal data: admins, delivery bookkeeping, the audit log, jobs and the core KV
families (sessions, workflows, rate limits, dead letters). See ``telegram_bot.privacy``."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.admin.models import LogEntry
from django.contrib.contenttypes.models import ContentType
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from telegram_bot import languages
from telegram_bot.jobs.models import Job
from telegram_bot.models import AuditEntry, BlockedChat, BotAdmin, ChatPreference, DeliveryFailure
from telegram_bot.privacy import (
    CONFIRM_PREFIX,
    ErasureDeferred,
    Subject,
    delete_keys,
    erasure_blockers,
    keys_naming,
    mentions,
    pseudonym,
    values_mentioning,
)
from telegram_bot.state import KVStore

MODELS = {
    "telegram_bot.BotAdmin": "an admin's Telegram id and name, who added them",
    "telegram_bot.ChatPreference": "the time zone and language of a chat (a private chat is a "
    "person)",
    "telegram_bot.BlockedChat": "a chat that blocked the bot (a private chat is a person)",
    "telegram_bot.DeliveryFailure": "a message that could not be delivered to a chat",
    "telegram_bot.AuditEntry": "who acted on whom: ids and names of actors and targets",
    "telegram_bot.Job": "background work; its payload may name a member (a captcha, a ban)",
    "telegram_bot.KVEntry": "the KV store on the database backend: see the key families",
    "admin.LogEntry": "the admin site's history: an edited object's label (a bot admin's "
    "name and id)",
}
KEY_FAMILIES = {
    "session": "per-user sessions session:<scope>:<user>",
    "workflow": "a user's multi-step workflow workflow:<chat>:<user> (what they typed so far)",
    "rl": "rate-limit windows per user (rl:u:, rl:x:, rl:n:) and per chat, one minute",
    "dlq": "dead letters: whole updates, with the sender and the text",
    "lang": "the language a user last wrote to the bot in (lang:<user>), 180 days",
    "lock": "locks; the /forgetme confirmations (lock:forget:) and an erasure's own run "
    "(lock:erase:); apps that keep records under lock: erase their own",
}
ERASED = "(erased)"
NOT_PERSONAL = {
    "counter:": "general counters without user ids",
    "upd:": "update ids and their processing state",
    "live:": "process heartbeats",
}


def export(user_id: int, store: KVStore) -> dict[str, Any]:
    # Their actions kept under their pseudonym after an erasure are theirs too.
    audit = AuditEntry.objects.filter(
        Q(actor_id__in=(user_id, pseudonym(user_id))) | Q(target_id=user_id) | Q(chat_id=user_id)
    ).order_by("created_at", "id")
    return {
        "bot_admin": list(
            BotAdmin.objects.filter(telegram_id=user_id).values(
                "telegram_id", "display_name", "added_by", "created_at"
            )
        ),
        "chat_preference": list(
            ChatPreference.objects.filter(chat_id=user_id).values("time_zone", "language")
        ),
        "blocked_chat": list(BlockedChat.objects.filter(chat_id=user_id).values()),
        "delivery_failures": list(DeliveryFailure.objects.filter(chat_id=user_id).values()),
        "audit_log": [
            _own_part(entry, user_id)
            for entry in audit.values(
                "created_at",
                "actor_id",
                "actor_name",
                "source",
                "chat_id",
                "action",
                "target_id",
                "target_name",
                "reason",
                "outcome",
                "detail",
            )
        ],
        # Only the parts of a job that name the person: a notice queued for an admin holds
        # someone else's join request (name, bio, id), a moderator's queued ban its target.
        "jobs": [
            {
                "kind": job.kind,
                "status": job.status,
                "payload": {k: v for k, v in job.payload.items() if mentions(v, user_id)},
            }
            for job in _jobs_mentioning(user_id)
        ],
        "language": languages.remembered(store, user_id),
        "kv": {
            key: value
            for prefix in ("session:", "workflow:", "dlq:", CONFIRM_PREFIX)
            for key, value in values_mentioning(store, prefix, user_id)
        },
    }


def _own_part(entry: Any, user_id: int) -> dict[str, Any]:
    """An audit entry as the person's export shows it: an action they took on someone else
    (a join request they decided, a member they banned) without that someone's id and name."""
    if entry["target_id"] is not None and entry["target_id"] not in (user_id, pseudonym(user_id)):
        return {**entry, "target_id": None, "target_name": ""}
    return dict(entry)


def erase(subject: Subject, store: KVStore) -> dict[str, int]:
    user = subject.user_id
    counts: dict[str, int] = {}
    with transaction.atomic():
        # The jobs to delete are read first, then the blockers asked again (first of every
        # app's erase): a ban that met a 429 after erase_user's own check and before this
        # read defers the erasure; one after it is not among the jobs deleted below.
        jobs = _jobs_mentioning(user)
        reasons = erasure_blockers(user)
        if reasons:
            raise ErasureDeferred(reasons)
        counts["bot_admin"] = BotAdmin.objects.filter(telegram_id=user).delete()[0]
        BotAdmin.objects.filter(added_by=user).update(added_by=None)
        counts["chat_preference"] = ChatPreference.objects.filter(chat_id=user).delete()[0]
        counts["blocked_chat"] = BlockedChat.objects.filter(chat_id=user).delete()[0]
        counts["delivery_failures"] = DeliveryFailure.objects.filter(chat_id=user).delete()[0]
        counts["audit_entries"] = _erase_from_audit(subject)
        counts["admin_history"] = _redact_admin_history(user)
        kept, dropped = [], []
        for job in jobs:
            payload = _without_actor(job.payload, user, subject.pseudonym)
            if payload is None:
                dropped.append(job.pk)
            else:
                error = "" if mentions(job.last_error, user) else job.last_error
                Job.objects.filter(pk=job.pk).update(payload=payload, last_error=error)
                kept.append(job.pk)
        counts["jobs"] = Job.objects.filter(pk__in=dropped).delete()[0]
        counts["jobs_anonymised"] = len(kept)
    kv = [key for prefix in ("session:", "workflow:") for key in keys_naming(store, prefix, user)]
    kv += list(keys_naming(store, "rl:", user))
    kv += [key for key, _ in values_mentioning(store, "dlq:", user)]
    counts["kv_keys"] = delete_keys(store, kv) + languages.forget(store, user)
    return counts


def purge(store: KVStore) -> dict[str, int]:
    """Audit entries older than ``AUDIT_LOG_RETENTION_DAYS``; the erasure records stay as
    long as the rest. Dead letters expire by their TTL (``DEAD_LETTER_RETENTION_DAYS``)."""
    cutoff = timezone.now() - timedelta(days=settings.AUDIT_LOG_RETENTION_DAYS)
    deleted, _ = AuditEntry.objects.filter(created_at__lt=cutoff).delete()
    return {"audit_entries": deleted}


def _redact_admin_history(user_id: int) -> int:
    """The admin site's history labels objects by ``str()``: a bot admin's is their name and
    id, a delivery failure's its chat. Entries of those models whose label names the id lose
    the label and the change message; another model's label ("post 499") is not searched."""
    text = str(user_id)
    labelled = ContentType.objects.get_for_models(BotAdmin, DeliveryFailure).values()
    entries = LogEntry.objects.filter(content_type__in=list(labelled), object_repr__contains=text)
    ids = [entry.pk for entry in entries if mentions(entry.object_repr, user_id)]
    redacted = LogEntry.objects.filter(pk__in=ids).update(object_repr=ERASED, change_message="")
    # A private chat's preference and a blocked chat are keyed by the chat id, the user's own:
    # their entries keep no object id either (it would link the history to the person).
    keyed_by_id = ContentType.objects.get_for_models(ChatPreference, BlockedChat).values()
    return redacted + LogEntry.objects.filter(
        content_type__in=list(keyed_by_id), object_id=text
    ).update(object_id=None, object_repr=ERASED, change_message="")


def _erase_from_audit(subject: Subject) -> int:
    """The audit log without the person, field by field (call inside the erasure's
    transaction); how many entries changed.

    - Entries they acted in (as an admin or moderator) stay accountable: the actor becomes
      their pseudonym, stable across erasures, and loses the name; the entry's chat or target
      when it is themselves (their private chat, an action on themselves) takes the pseudonym
      too, so no entry pairs it with the anonymous id.
    - Entries about them (the target) or in their private chat (the chat: its id is theirs)
      take the erasure's anonymous id; the target's name goes, and an entry on their private
      chat loses the words the admin site wrote about that chat (the object's label, the
      changed fields, which hold its id and their settings).

    Only these fields: free text (a reason, another entry's detail) is other people's writing
    and is never searched for the number ("499 message(s) from #2" stays when user 2 or 499
    is erased)."""
    user, anon, pseudo = subject.user_id, subject.anonymous_id, subject.pseudonym
    entries = AuditEntry.objects
    changed = set(
        entries.filter(Q(actor_id=user) | Q(target_id=user) | Q(chat_id=user)).values_list(
            "pk", flat=True
        )
    )
    own = entries.filter(actor_id=user)
    own.filter(target_id=user).update(target_id=pseudo, target_name="")
    own.filter(chat_id=user).update(chat_id=pseudo)
    own.update(actor_id=pseudo, actor_name="")
    entries.filter(target_id=user).update(target_id=anon, target_name="")
    their_chat = entries.filter(chat_id=user)
    their_chat.exclude(target_name="").update(target_name=ERASED)
    their_chat.exclude(detail="").update(detail=ERASED)
    their_chat.update(chat_id=anon)
    return len(changed)


def _without_actor(payload: Any, user_id: int, pseudonym: int) -> dict[str, Any] | None:
    """A job the erased person only asked for (``actor_id``: a moderator's ban of someone
    else, waiting out Telegram's rate limit) is another member's business: it stays, with
    their pseudonym for its actor (the audit entry it records names the moderator as the
    log's other entries do). None for a job that is about them: it is deleted."""
    if not isinstance(payload, dict) or payload.get("actor_id") != user_id:
        return None
    kept = {**payload, "actor_id": pseudonym}
    if "actor_name" in kept:
        kept["actor_name"] = ""
    return None if mentions(kept, user_id) else kept


def _jobs_mentioning(user_id: int) -> list[Job]:
    # A text filter narrows the rows; ``mentions`` then checks the numbers themselves.
    text = str(user_id)
    candidates = Job.objects.filter(Q(payload__icontains=text) | Q(last_error__contains=text))
    return [
        job
        for job in candidates
        if mentions(job.payload, user_id) or mentions(job.last_error, user_id)
    ]
