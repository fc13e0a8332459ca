"""Moderation's personal data: warnings (given and received), the warned member's name, the
admin cache and anti-flood windows. Erasure anonymises warnings, so a chat's moderation
figures stay, and waits while an action about the member is still to be applied. See
``telegram_bot.privacy``."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils.translation import gettext as _

from moderation.flood import flood_key
from moderation.models import Connection, Warning, WarnState
from moderation.rights import admins_key
from moderation.services import JOB_KIND
from telegram_bot.jobs.models import Job, JobStatus
from telegram_bot.privacy import Subject, delete_keys, values_mentioning
from telegram_bot.state import KVStore

FLOOD_PREFIX = flood_key(0, 0, 0).removesuffix("0:0:0")
ADMINS_PREFIX = admins_key(0).removesuffix("0")

MODELS = {
    "moderation.Warning": "a warning: the member, the moderator, the reason",
    "moderation.WarnState": "a warned member's id, name and username per chat",
    "moderation.Connection": "an admin's private chat connected to a group (/connect)",
}
KEY_FAMILIES = {
    "mod": "a chat's administrators (ids, usernames; 10 min) and anti-flood windows per member",
}
NOT_PERSONAL = {"moderation.ChatSettings": "per-chat moderation settings"}


def export(user_id: int, store: KVStore) -> dict[str, Any]:
    fields = ("chat_id", "reason", "created_at", "expires_at", "revoked", "spent")
    return {
        "warnings_received": list(Warning.objects.filter(user_id=user_id).values(*fields)),
        "warnings_given": list(Warning.objects.filter(moderator_id=user_id).values(*fields)),
        "warned_as": list(
            WarnState.objects.filter(user_id=user_id).values("chat_id", "username", "name")
        ),
        "anti_flood_windows": sorted(_flood_keys(store, user_id)),
        "connected_to": list(
            Connection.objects.filter(user_id=user_id).values_list("chat_id", flat=True)
        ),
    }


def erasure_blocked(user_id: int) -> str | None:
    """A mute, ban, kick or their undoing of this member that waits out Telegram's rate limit
    (a ``moderation.act`` job) must run first: erasing deletes jobs about the person, so a
    member could otherwise escape a ban with /forgetme, or stay banned after an unban."""
    pending = Job.objects.filter(
        kind=JOB_KIND,
        status__in=(JobStatus.QUEUED, JobStatus.RUNNING),
        payload__user_id=user_id,
    ).values_list("payload__action", flat=True)
    actions = sorted({str(action) for action in pending})
    if not actions:
        return None
    return _("a moderation action about this member (%(actions)s) is still to be applied") % {
        "actions": ", ".join(actions)
    }


def erase(subject: Subject, store: KVStore) -> dict[str, int]:
    user, anon = subject.user_id, subject.anonymous_id
    with transaction.atomic():
        counts = {
            # Warnings they received go with the anonymous member; those they gave stay the
            # moderator's, under their pseudonym, as the audit log keeps them.
            "warnings": Warning.objects.filter(user_id=user).update(user_id=anon)
            + Warning.objects.filter(moderator_id=user).update(moderator_id=subject.pseudonym),
            "warned_members": WarnState.objects.filter(user_id=user).update(
                user_id=anon, username="", name=""
            ),
            "connections": Connection.objects.filter(user_id=user).delete()[0],
        }
    # The admin cache is refetched from Telegram when it is missing: drop the chats naming them.
    cached = [key for key, _ in list(values_mentioning(store, ADMINS_PREFIX, user))]
    counts["kv_keys"] = delete_keys(store, cached + _flood_keys(store, user))
    return counts


def _flood_keys(store: KVStore, user_id: int) -> list[str]:
    # mod:fl:<chat>:<user>:<window>
    return [
        key
        for key in store.scan_all(FLOOD_PREFIX)
        if key.removeprefix(FLOOD_PREFIX).split(":")[1:2] == [str(user_id)]
    ]
