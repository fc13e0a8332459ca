"""Community's personal data: join requests (who asked, their bio, who decided), members' stays
and captcha challenges, joins and leaves. See ``telegram_bot.privacy``."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from django.conf import settings
from django.utils.translation import gettext as _

from community.member_state import challenge_key, stay_key
from community.models import MemberMovement, SpamListEntry
from community.records import (
    DECIDING,
    RECORD_PREFIX,
    Decision,
    JoinRequestRecord,
    JoinRequestStore,
)
from community.services.raid import RAID_REMOVE_JOB
from telegram_bot.jobs.models import Job, JobStatus
from telegram_bot.privacy import Subject, delete_keys, mentions, values_mentioning
from telegram_bot.state import KVStore, get_store
from telegram_bot.state.keys import family_of

STAY_PREFIX = stay_key(0, 0).removesuffix("0:0")
CHALLENGE_PREFIX = challenge_key("")
INDEX_PREFIX = JoinRequestStore.index_key(0, 0).removesuffix("0:0")

MODELS = {
    "community.MemberMovement": "when a member joined or left a chat (growth figures)",
    "community.SpamListEntry": "an account on the local spam list (its id, the list, a reason); "
    "erasure takes it off the list",
}
KEY_FAMILIES = {
    family_of(RECORD_PREFIX): "join requests: the requester's id, name, bio (summary), the "
    "deciding admin, the admins' copies; the requester's newest request",
    "members": "a member's stay in a chat (members:m:<chat>:<user>): joined, welcomed, captcha",
    "cap": "captcha challenges: the member as Telegram described them",
}
NOT_PERSONAL = {
    "community.ChatPolicy": "per-chat join settings",
    "community.MemberPolicy": "per-chat welcome, rules, captcha settings",
    "community.BotChat": "the groups and channels the bot is in",
    "community.MemberCount": "member count per chat and day",
}


def export(user_id: int, store: KVStore) -> dict[str, Any]:
    requests = JoinRequestStore(store)
    records = [record for record in requests.all() if mentions(record.to_json(), user_id)]
    return {
        "join_requests": [
            record.to_json()
            for record in records
            if record.user_id == user_id or record.user_chat_id == user_id
        ],
        # An admin's part in other people's requests: their copy and their decision, never
        # the requester's name, bio or id.
        "join_requests_handled": [
            part for record in records if (part := _admin_part(record, user_id)) is not None
        ],
        "stays": dict(_stays(store, user_id)),
        "captcha": [value for _key, value in values_mentioning(store, CHALLENGE_PREFIX, user_id)],
        "joins_and_leaves": list(
            MemberMovement.objects.filter(user_id=user_id)
            .order_by("at")
            .values("chat_id", "kind", "at")
        ),
        "spam_list": list(
            SpamListEntry.objects.filter(user_id=user_id).values("source", "reason", "added_at")
        ),
    }


def erasure_blocked(user_id: int) -> str | None:
    """What about this member must be carried out first: erasing deletes the jobs and records
    that carry it. An anti-raid removal waiting out Telegram's rate limit (a raider would
    escape it with /forgetme), a captcha not finished (its deadline would find no challenge
    and leave the member muted for good), a join request whose decision is being applied (it
    would stay pending in Telegram)."""
    reasons = []
    if Job.objects.filter(
        kind=RAID_REMOVE_JOB,
        status__in=(JobStatus.QUEUED, JobStatus.RUNNING),
        payload__user_id=user_id,
    ).exists():
        reasons.append(_("an anti-raid removal"))
    store = get_store()
    recent = time.time() - 3600  # a challenge stuck past this is left to its TTL
    challenges = [value for _key, value in values_mentioning(store, CHALLENGE_PREFIX, user_id)]
    if any(
        isinstance(c, dict)
        and c.get("user_id") == user_id
        and not c.get("finished")
        and int(c.get("deadline") or 0) > recent
        for c in challenges
    ):
        reasons.append(_("a captcha"))
    if any(r.user_id == user_id and r.status == DECIDING for r in JoinRequestStore(store).all()):
        reasons.append(_("a join request being decided"))
    if not reasons:
        return None
    return _("something about this member is still to be carried out (%(what)s)") % {
        "what": ", ".join(str(reason) for reason in reasons)
    }


def erase(subject: Subject, store: KVStore) -> dict[str, int]:
    user, anon = subject.user_id, subject.anonymous_id
    requests = JoinRequestStore(store)
    own, decided = [], 0
    for record in list(requests.all()):
        if record.user_id == user or record.user_chat_id == user:
            own.append(requests.key(record.token))
        elif mentions(record.to_json(), user):
            _, changed = requests.update(record.token, lambda r: _without_admin(r, user, anon))
            decided += changed
    counts = {
        "join_requests": delete_keys(store, own),
        "join_request_decisions": decided,
        "join_request_index": delete_keys(
            store, [key for key in store.scan_all(INDEX_PREFIX) if key.endswith(f":{user}")]
        ),
        "stays": delete_keys(store, [key for key, _ in _stays(store, user)]),
        "captcha": delete_keys(
            store, [key for key, _ in list(values_mentioning(store, CHALLENGE_PREFIX, user))]
        ),
        "joins_and_leaves": MemberMovement.objects.filter(user_id=user).update(user_id=anon),
        "spam_list": SpamListEntry.objects.filter(user_id=user).delete()[0],
    }
    return counts


def purge(store: KVStore) -> dict[str, int]:
    """Join requests older than ``JOIN_REQUEST_RETENTION_DAYS`` (their TTL is 7 days)."""
    cutoff = int(time.time()) - settings.JOIN_REQUEST_RETENTION_DAYS * 24 * 3600
    requests = JoinRequestStore(store)
    old = [requests.key(r.token) for r in list(requests.all()) if r.requested_at < cutoff]
    return {"join_requests": delete_keys(store, old)}


def _stays(store: KVStore, user_id: int) -> list[tuple[str, Any]]:
    keys = [key for key in store.scan_all(STAY_PREFIX) if key.endswith(f":{user_id}")]
    return [(key, store.get(key)) for key in keys]


def _without_admin(record: JoinRequestRecord, user: int, anon: int) -> JoinRequestRecord | None:
    """The record with an admin who decided it or holds a copy replaced by ``anon``."""
    copies = [copy for copy in record.copies if copy[0] != user]
    decision = record.decision
    if decision is not None and decision.by_id == user:
        decision = Decision(action=decision.action, by_id=anon, by_name="", at=decision.at)
    changed = replace(record, copies=copies, decision=decision)
    return None if changed == record else changed


def _admin_part(record: JoinRequestRecord, user_id: int) -> dict[str, Any] | None:
    if record.user_id == user_id or record.user_chat_id == user_id:
        return None
    decision = record.decision
    decided = decision is not None and decision.by_id == user_id
    copies = [copy for copy in record.copies if copy[0] == user_id]
    if not (decided or copies):
        return None
    return {
        "chat_id": record.chat_id,
        "requested_at": record.requested_at,
        "copies": copies,
        "decision": (
            {"action": decision.action, "at": decision.at} if decided and decision else None
        ),
    }
