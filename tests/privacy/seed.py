"""A member present in every table and KV key family that holds personal data, and the scan
that finds any trace of them (their id, name or username) anywhere.

Group messages, a support ticket and a join request go through the real pipeline (the
statistics, support and community code write what they write); the rest is seeded the way
each app stores it.
"""

from __future__ import annotations

import re
import secrets
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any

from django.apps import apps
from django.contrib.admin.models import ADDITION, LogEntry
from django.contrib.auth.models import User
from django.utils import timezone

from broadcasts.models import Broadcast, BroadcastRecipient, ChatMembership, Subscriber
from community.member_state import Challenge, Stay, challenge_key, stay_key
from community.models import MemberMovement, SpamListEntry
from content.models import Post
from moderation.flood import flood_key
from moderation.models import Connection, Warning, WarnState
from moderation.rights import admins_key
from moderation.rules.models import (
    AllowedDomain,
    Approval,
    BanList,
    BanListChat,
    BlocklistEntry,
    Filter,
    Lock,
    Note,
    Report,
    ReportFlag,
    ReportNotice,
    ReportOptIn,
    SharedBan,
)
from stats import keys as stats_keys
from stats import write_behind
from stats.member_months import month_write
from stats.models import ChatUserProfile, DailyUserStat, UnsettledCount
from telegram_bot.audit import Actor, audit_record
from telegram_bot.jobs.models import Job, JobStatus
from telegram_bot.models import BlockedChat, BotAdmin, ChatPreference, DeliveryFailure
from telegram_bot.pipeline.process import process_update
from telegram_bot.privacy import CONFIRM_PREFIX, key_names, privacy_modules
from telegram_bot.state import KVStore
from telegram_bot.state.dead_letters import DeadLetterStore
from telegram_bot.state.keys import FAMILIES
from tests.builders import make_join_request_update, make_message_update

USER = 987_654_321
OTHER = 555_000_111
FIRST, LAST, USERNAME = "Zebulon", "Quarkfeld", "zquark_77"
NAMES = (FIRST, LAST, USERNAME)
CHATS = (-100_111, -100_222)
OWNER = 1000


def person(user_id: int) -> dict[str, Any]:
    if user_id == USER:
        return {
            "id": USER,
            "is_bot": False,
            "first_name": FIRST,
            "last_name": LAST,
            "username": USERNAME,
        }
    return {"id": user_id, "is_bot": False, "first_name": "Olga", "username": "olga_o"}


def unfinished_captcha(
    store: KVStore, user_id: int, token: str, *, seconds_left: int, chat_id: int = -100111
) -> Challenge:
    """A captcha ``user_id`` has not answered yet, stored as community stores it."""
    challenge = Challenge(
        token=token,
        chat_id=chat_id,
        user_id=user_id,
        stay="s1",
        user=person(user_id),
        chat_title="Group",
        choices=["a", "b"],
        answer=0,
        deadline=int(time.time()) + seconds_left,
        restricted=True,
    )
    store.set(challenge_key(token), challenge.to_json())
    return challenge


def group_message(user_id: int, chat_id: int, text: str, *, days_ago: int = 0) -> dict[str, Any]:
    update = make_message_update(text, chat_id=chat_id, user_id=user_id)
    update["message"]["from"] = person(user_id)
    update["message"]["date"] = int(time.time()) - days_ago * 86_400
    return update


def seed(store: KVStore) -> None:
    """USER (and OTHER, who must be left alone) everywhere."""
    for chat_id in CHATS:
        for days_ago in (0, 1):
            for user_id, count in ((USER, 3), (OTHER, 2)):
                for n in range(count):
                    process_update(
                        group_message(user_id, chat_id, f"words here {n}", days_ago=days_ago)
                    )
    support = make_message_update(f"/support Help, {FIRST} here", chat_id=USER, user_id=USER)
    support["message"]["from"] = person(USER)
    process_update(support)
    join = make_join_request_update(user_id=USER, chat_id=CHATS[0], bio=f"I am {FIRST} {LAST}")
    join["chat_join_request"]["from"] = person(USER)
    process_update(join)
    _seed_core(store)
    _seed_apps(store)
    # Today's messages' database adds land with their epoch, up to STATS_WRITE_BEHIND_MS
    # later (stats/write_behind.py): the tests read the tables right after the seed.
    write_behind.flush()


def _seed_core(store: KVStore) -> None:
    admin_row = BotAdmin.objects.create(
        telegram_id=USER, display_name=f"{FIRST} {LAST}", added_by=OWNER
    )
    site_user = User.objects.create_user("site-operator")
    LogEntry.objects.log_actions(
        site_user.pk, [admin_row], ADDITION, change_message=[{"added": {}}], single_object=True
    )
    ChatPreference.objects.create(chat_id=USER, language="en")
    BlockedChat.objects.create(chat_id=USER, reason="Forbidden: bot was blocked by the user")
    DeliveryFailure.objects.create(
        chat_id=USER, purpose="admin notice", error_class="Forbidden", description="blocked"
    )
    audit_record(
        action="warn",
        actor=Actor(OWNER, "Owner"),
        source="command",
        chat_id=CHATS[0],
        target_id=USER,
        target_name=f"{FIRST} {LAST}",
    )
    audit_record(
        action="ban",
        actor=Actor(USER, FIRST),
        source="command",
        chat_id=CHATS[1],
        target_id=OTHER,
        target_name="Olga",
    )
    # A finished one: a job still to run about them defers the erasure
    # (test_erasure_of_data_in_flight_and_shared).
    Job.objects.create(
        kind="moderation.act",
        payload={"user_id": USER, "name": FIRST},
        status=JobStatus.SUCCEEDED,
        finished_at=timezone.now(),
    )
    store.set(f"session:u:{USER}", {"v": 1, "d": {"lang": "en"}})
    store.set(f"workflow:{USER}:{USER}", {"name": "support.open", "step": "text", "data": {}})
    store.set(f"rl:u:{USER}:1", 1, 60_000)
    store.set(f"lang:{USER}", "ru", 60_000)
    failing = make_message_update(f"/support {FIRST}", chat_id=USER, user_id=USER)
    failing["message"]["from"] = person(USER)
    DeadLetterStore(store).put(failing, RuntimeError("boom"))
    store.set(f"{CONFIRM_PREFIX}{secrets.token_urlsafe(12)}", {"user": USER, "state": "pending"})


def _seed_apps(store: KVStore) -> None:
    now = int(time.time())
    MemberMovement.objects.create(
        chat_id=CHATS[0],
        user_id=USER,
        stay="s1",
        kind="join",
        at=timezone.now(),
        day=timezone.now().date(),
    )
    store.set(stay_key(CHATS[0], USER), Stay(inside=True, date=now, stay="s1").to_json())
    token = "captchatoken"
    store.set(
        challenge_key(token),
        Challenge(
            token=token,
            chat_id=CHATS[0],
            user_id=USER,
            stay="s1",
            user=person(USER),
            chat_title="Group",
            choices=["a", "b"],
            answer=0,
            deadline=now + 60,
            # Passed and carried out: an unfinished captcha defers the erasure (its deadline
            # job would find no challenge and leave the member muted).
            status="passed",
            finished=True,
        ).to_json(),
    )
    Warning.objects.create(
        chat_id=CHATS[0],
        user_id=USER,
        moderator_id=OWNER,
        reason="spam",
        expires_at=timezone.now() + timedelta(days=30),
    )
    Warning.objects.create(
        chat_id=CHATS[0],
        user_id=OTHER,
        moderator_id=USER,
        reason="rude",
        expires_at=timezone.now() + timedelta(days=30),
    )
    WarnState.objects.create(chat_id=CHATS[0], user_id=USER, username=USERNAME, name=FIRST)
    # Chat rules: approved in one chat, and the author of rules and another's approval.
    Approval.objects.create(chat_id=CHATS[0], user_id=USER, name=FIRST, approved_by=OWNER)
    Approval.objects.create(chat_id=CHATS[1], user_id=OTHER, name="Other", approved_by=USER)
    Lock.objects.create(chat_id=CHATS[0], kind="url", created_by=USER)
    AllowedDomain.objects.create(chat_id=CHATS[0], domain="example.org", created_by=USER)
    BlocklistEntry.objects.create(chat_id=CHATS[0], pattern="spam", created_by=USER)
    Note.objects.create(chat_id=CHATS[0], name="rules", text="Be kind", created_by=USER)
    Filter.objects.create(chat_id=CHATS[0], keyword="hello", text="Hi", created_by=USER)
    # Reports: of their message, by them of another's, decided by them; they take reports.
    theirs = Report.objects.create(
        chat_id=CHATS[0], message_id=1, target_id=USER, target_name=FIRST, excerpt="spam"
    )
    ReportFlag.objects.create(report=theirs, reporter_id=OTHER, reporter_name="Other")
    others = Report.objects.create(
        chat_id=CHATS[0],
        message_id=2,
        target_id=OTHER,
        target_name="Other",
        decided_by_id=USER,
        decided_by_name=FIRST,
    )
    ReportFlag.objects.create(report=others, reporter_id=USER, reporter_name=FIRST)
    ReportNotice.objects.create(report=others, chat_id=USER, message_id=3)
    ReportOptIn.objects.create(user_id=USER)
    Connection.objects.create(user_id=USER, chat_id=CHATS[0], chat_title="Cats")
    # Shared bans: a list they own (a chat they added), a ban of them, a ban they changed.
    shared = BanList.objects.create(name="Mine", owner_id=USER)
    BanListChat.objects.create(ban_list=shared, chat_id=CHATS[0], added_by=USER)
    SharedBan.objects.create(ban_list=shared, user_id=USER, name=FIRST, reason="spam")
    SharedBan.objects.create(ban_list=shared, user_id=OTHER, name="Other", changed_by=USER)
    SpamListEntry.objects.create(user_id=USER, source="cas")
    store.increment(flood_key(CHATS[0], USER, 99), 1)
    store.set(admins_key(CHATS[0]), [[USER, "administrator", True, True, USERNAME]])
    # A Mini App session (webapp/sessions.py's shape).
    store.set(
        "miniapp:s:" + "a" * 64,
        {"v": 1, "d": {"uid": USER, "name": FIRST, "lang": "en", "exp": int(time.time()) + 3600}},
        3_600_000,
    )
    for chat_id in CHATS:
        ChatUserProfile.objects.create(
            chat_id=chat_id, user_id=USER, display_name=f"{FIRST} {LAST}", username=USERNAME
        )
    store.set(stats_keys.joined_key(CHATS[0], USER), now)
    # A day of a closed month, and the member sums of that month (an erasure drops them).
    closed = datetime.now(UTC).date() - timedelta(days=45)
    for user_id in (USER, OTHER):
        DailyUserStat.objects.create(
            chat_id=CHATS[0], day=closed, user_id=user_id, message_count=2, word_count=3, hour_10=2
        )
    assert month_write(CHATS[0], closed) == 2
    failed = {"users": {str(USER): ["word_count"], str(OTHER): ["message_count"]}}
    store.set(stats_keys.failed_key(CHATS[1], datetime.now(UTC).date()), failed)
    # A message counted while the KV store did not answer, not settled yet.
    UnsettledCount.objects.create(
        chat_id=CHATS[1], day=datetime.now(UTC).date(), user_id=USER, columns=["message_count"]
    )
    Post.objects.create(channel="@news", text="news", created_by=f"telegram:{USER}")
    Subscriber.objects.create(user_id=USER, first_name=FIRST, username=USERNAME, language="en")
    ChatMembership.objects.create(chat_id=CHATS[0], user_id=USER)
    broadcast = Broadcast.objects.create(text="news for everyone")
    BroadcastRecipient.objects.create(broadcast=broadcast, user_id=USER, status="sent")


# --- the scan ------------------------------------------------------------------------------
_NUMBER = re.compile(rf"(?<![0-9]){USER}(?![0-9])")


def holds(value: Any) -> bool:
    """Whether a stored value holds USER's id, name or username."""
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, int):
        return value == USER
    if isinstance(value, str):
        folded = value.casefold()
        return bool(_NUMBER.search(value)) or any(n.casefold() in folded for n in NAMES)
    if isinstance(value, dict):
        return any(holds(k) or holds(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(holds(item) for item in value)
    return False


def traces(store: KVStore) -> dict[str, list[str]]:
    """Every table row field and KV key that holds USER: ``{model label or family: [...]}``."""
    found: dict[str, list[str]] = defaultdict(list)
    for model in apps.get_models():
        for row in model._base_manager.all().values():
            for field, value in row.items():
                if holds(value):
                    found[model._meta.label].append(f"{row.get('id', row)}.{field}={value!r}")
    for family in FAMILIES:
        for key in store.scan_all(f"{family}:"):
            if key_names(key, USER) or holds(key) or holds(store.get(key)):
                found[family].append(key)
    return dict(found)


def personal_declared() -> set[str]:
    declared: set[str] = set()
    for _label, module in privacy_modules():
        declared |= set(module.MODELS) | set(module.KEY_FAMILIES)
    return declared


def chat_totals() -> dict[tuple[int, str], tuple[int, ...]]:
    """Per (chat, day): the sum of every column and the number of members."""
    from stats.privacy import COLUMNS

    totals: dict[tuple[int, str], list[int]] = {}
    members: dict[tuple[int, str], int] = defaultdict(int)
    for row in DailyUserStat.objects.all():
        key = (row.chat_id, row.day.isoformat())
        sums = totals.setdefault(key, [0] * len(COLUMNS))
        for i, column in enumerate(COLUMNS):
            sums[i] += getattr(row, column)
        members[key] += 1
    return {key: (*sums, members[key]) for key, sums in totals.items()}


def kv_totals(store: KVStore) -> dict[str, Any]:
    """The chats' KV daily totals, and every counter summed per (chat, day, column)."""
    sums: dict[str, int] = defaultdict(int)
    for family in stats_keys.COUNTER_FAMILIES:
        for key in store.scan_all(family):
            parsed = stats_keys.parse_counter_key(key)
            if parsed is not None:
                sums[f"{parsed.chat_id}:{parsed.day}:{parsed.column}"] += store.get(key) or 0
    for prefix in (stats_keys.ACTIVITY, stats_keys.TOTAL):
        for key in store.scan_all(prefix):
            sums[key] = store.get(key)
    return dict(sums)


def today() -> str:
    return datetime.now(UTC).date().isoformat()
