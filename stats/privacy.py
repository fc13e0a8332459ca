"""The statistics' personal data: a member's daily counters and aggregates, their name and
username (profiles, ``last_message``), the raw-message buffer (what they wrote, when the
operator keeps text), their join time.

Erasure moves the member's daily numbers, in both stores, to the erasure's anonymous id
(``telegram_bot.privacy``), so every chat total, every column sum and the number of distinct
members stay what they were; names, the buffer and the join times are deleted. Each (chat,
day) moves under that day's exclusive lock (``stats.daylock``), like the backfill, so no live
write or rebuild sees half of it:

- database: the member's row is added to the anonymous row and deleted, one transaction;
- KV: each counter is added to the anonymous counter by ``apply_once`` with a marker of this
  erasure (a re-run after a crash never adds it twice), then deleted; late markers and the
  ``stats:failed`` index are renamed.

A crash between the KV moves and the database commit leaves the day moved in the KV store
only (on the database KV backend both are one transaction); the re-run moves the database
row. The gap it leaves: a backfill of that very day in between would rebuild the anonymous
row from the counters and the re-run then adds the member's row again (a closed day's
verification then flags the day until the next rebuild).
"""

from __future__ import annotations

import hashlib
from datetime import date
from typing import Any

from django.db import transaction

from stats import keys
from stats.aggregates import VALUE_COLUMNS
from stats.config import counter_ttl_ms
from stats.daylock import lock_days
from stats.models import ChatUserProfile, DailyUserStat, MemberMonth, UnsettledCount
from telegram_bot.privacy import Subject, delete_keys, keys_naming
from telegram_bot.state import Increment, KVStore

COLUMNS = tuple(keys.COLUMN_CATEGORY)
BUFFER_PREFIX = "msg:"
JOINED_PREFIX = keys.joined_key(0, 0).removesuffix("0:0")
LAST_PREFIX = keys.last_message_key(0, 0).removesuffix("0:0")

MODELS = {
    "stats.DailyUserStat": "a member's daily numbers per chat (messages, words, media, hours)",
    "stats.ChatUserProfile": "a member's display name and username per chat",
    "stats.MemberMonth": "a member's sums of their daily numbers per chat and closed month "
    "(an erasure's move of the daily numbers drops them: triggers)",
    "stats.UnsettledCount": "a member's message counted while the KV store did not answer, "
    "until the reconciliation settles it (a minute); an erasure moves it to the anonymous id",
}
KEY_FAMILIES = {
    "stats": "daily counters per chat, day and member; late markers and the failed-write "
    "index name members; stats:joined: is a member's join time",
    "last_message": "a member's last message per chat: time, id, name, username",
    "msg": "the raw-message buffer: member id, kind, words and, when kept, the text",
}
NOT_PERSONAL = {
    "activity:": "daily message totals per chat",
    "stats.DailyCoverage": "how far a chat's days are verified",
    "stats.DailyTotals": "a chat's daily sums over all its members",
    "stats.BackfillState": "the backfill job's state",
    "stats.StatsChat": "titles of the counted chats",
    "stats.StatsSettings": "operator switches",
    "stats.ViolationRule": "violation rules",
}


def export(user_id: int, store: KVStore) -> dict[str, Any]:
    rows = DailyUserStat.objects.filter(user_id=user_id).order_by("chat_id", "day")
    return {
        "daily": [
            {"chat_id": row.chat_id, "day": row.day, **{c: getattr(row, c) for c in COLUMNS}}
            for row in rows
        ],
        "monthly": [
            {
                "chat_id": row.chat_id,
                "month": row.month,
                **{c: getattr(row, c) for c in VALUE_COLUMNS},
                "last_day": row.last_day,
            }
            for row in MemberMonth.objects.filter(user_id=user_id).order_by("chat_id", "month")
        ],
        "profiles": list(
            ChatUserProfile.objects.filter(user_id=user_id).values(
                "chat_id", "display_name", "username"
            )
        ),
        "last_message": {key: store.get(key) for key in _ending(store, LAST_PREFIX, user_id)},
        "joined": {key: store.get(key) for key in _ending(store, JOINED_PREFIX, user_id)},
        "message_buffer": [value for _key, value in _buffer(store, user_id)],
    }


def erase(subject: Subject, store: KVStore) -> dict[str, int]:
    user = subject.user_id
    days = set(DailyUserStat.objects.filter(user_id=user).values_list("chat_id", "day"))
    days |= set(UnsettledCount.objects.filter(user_id=user).values_list("chat_id", "day"))
    for key in keys_naming(store, keys.MESSAGES, user):
        parsed = keys.parse_counter_key(key)
        if parsed is not None and parsed.user_id == user:
            days.add((parsed.chat_id, parsed.day))
    for key in keys_naming(store, keys.LATE, user):
        late = keys.parse_late_key(key)
        if late is not None and late[2] == user:
            days.add((late[0], late[1]))
    moved = sum(move_day(store, subject, chat_id, day) for chat_id, day in sorted(days))
    # Names go first from the KV store: the backfill hydrates profiles from last_message.
    names = delete_keys(store, list(_ending(store, LAST_PREFIX, user)))
    return {
        "days": moved,
        "names": names + ChatUserProfile.objects.filter(user_id=user).delete()[0],
        "joined": delete_keys(store, list(_ending(store, JOINED_PREFIX, user))),
        "buffered_messages": delete_keys(store, [key for key, _ in _buffer(store, user)]),
    }


def move_day(store: KVStore, subject: Subject, chat_id: int, day: date) -> int:
    """Move the member's numbers of one (chat, day) to the anonymous id, in both stores;
    1 when there was anything to move."""
    user, anon = subject.user_id, subject.anonymous_id
    counters = [keys.column_key(column, chat_id, day, user) for column in COLUMNS]
    with transaction.atomic():
        lock_days([(chat_id, day)], shared=False)
        moved = False
        for key, value in zip(counters, store.get_many(counters), strict=True):
            if isinstance(value, int) and not isinstance(value, bool):
                target = _renamed(key, user, anon)
                store.apply_once(
                    subject.marker(_digest(key)),
                    value,
                    [Increment(target, value, counter_ttl_ms())],
                )
                store.delete(key)
                moved = True
        late = keys.late_key(chat_id, day, user)
        marker = store.get(late)
        if marker is not None:
            store.set(keys.late_key(chat_id, day, anon), marker, counter_ttl_ms())
            store.delete(late)
        _rename_failed(store, keys.failed_key(chat_id, day), user, anon)
        unsettled = UnsettledCount.objects.filter(chat_id=chat_id, day=day, user_id=user)
        moved = bool(unsettled.update(user_id=anon)) or moved
        row = DailyUserStat.objects.select_for_update().filter(
            chat_id=chat_id, day=day, user_id=user
        )
        mine = row.first()
        if mine is not None:
            target_row, _ = DailyUserStat.objects.select_for_update().get_or_create(
                chat_id=chat_id, day=day, user_id=anon
            )
            for column in COLUMNS:
                setattr(target_row, column, getattr(target_row, column) + getattr(mine, column))
            target_row.save(update_fields=COLUMNS)
            mine.delete()
            moved = True
    return int(moved)


def _rename_failed(store: KVStore, key: str, user: int, anon: int) -> None:
    """``stats:failed:{chat}:{day}`` lists members by id: the member's entry moves to ``anon``."""
    for _ in range(20):
        value = store.get(key)
        if not isinstance(value, dict):
            return
        users = value.get("users")
        if not isinstance(users, dict) or str(user) not in users:
            return
        users = dict(users)
        columns = set(users.pop(str(user))) | set(users.get(str(anon), []))
        users[str(anon)] = sorted(columns)
        if store.compare_and_set(key, value, {**value, "users": users}, counter_ttl_ms()):
            return
    raise RuntimeError(f"{key}: too much contention")


def _renamed(key: str, user: int, anon: int) -> str:
    """The counter ``stats:<field>:<chat>:<day>:<user>[:<sub>]`` of ``anon``."""
    parts = key.split(":")
    if parts[4] != str(user):
        raise ValueError(f"{key} is not a counter of {user}")
    parts[4] = str(anon)
    return ":".join(parts)


def _digest(key: str) -> str:
    return "stats:" + hashlib.blake2b(key.encode(), digest_size=10).hexdigest()


def _ending(store: KVStore, prefix: str, user_id: int) -> list[str]:
    return [key for key in store.scan_all(prefix) if key.endswith(f":{user_id}")]


def _buffer(store: KVStore, user_id: int) -> list[tuple[str, Any]]:
    found = []
    keys_all = list(store.scan_all(BUFFER_PREFIX))
    for start in range(0, len(keys_all), 200):
        page = keys_all[start : start + 200]
        for key, value in zip(page, store.get_many(page), strict=True):
            if isinstance(value, dict) and value.get("u") == user_id:
                found.append((key, value))
    return found
