"""Counting a group message through the webhook: what counts, how, in one KV round trip."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from stats import keys
from stats.config import counting_config_clear
from stats.handlers import count_message, foresee_count
from stats.models import DailyUserStat, StatsSettings, ViolationKind, ViolationRule
from telegram_bot.bot import get_client
from telegram_bot.pipeline.context import Context
from telegram_bot.pipeline.router import get_router
from telegram_bot.pipeline.security import identify
from telegram_bot.state import override_store
from telegram_bot.state.base import RawOp
from telegram_bot.state.memory import MemoryStore
from telegram_bot.updates import parse_update
from tests.builders import make_edited_message_update, make_message_update, user
from tests.stats.conversation import sample

GROUP = -100777
DAY_MS = 24 * 3600 * 1000


class RecordingStore(MemoryStore):
    """A memory store that counts its calls and keeps the ops of each atomic commit."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: Counter[str] = Counter()
        self.commits: list[list[RawOp]] = []

    def _apply_once(self, raw_marker: str, marker_text: str, ttl: Any, ops: list[RawOp]) -> bool:
        self.calls["apply_once"] += 1
        self.commits.append(ops)
        return super()._apply_once(raw_marker, marker_text, ttl, ops)

    def _get(self, raw_key: str) -> str | None:
        self.calls["get"] += 1
        return super()._get(raw_key)

    def _set(self, raw_key: str, text: str, ttl_ms: int | None) -> None:
        self.calls["set"] += 1
        super()._set(raw_key, text, ttl_ms)

    def _increment(self, raw_key: str, by: int, ttl_ms: int | None) -> int:
        self.calls["increment"] += 1
        return super()._increment(raw_key, by, ttl_ms)


@pytest.fixture
def store(bot: Any) -> Iterator[RecordingStore]:
    recording = RecordingStore()
    with override_store(recording):
        yield recording


def group_message(text: str | None = "hello there", **kwargs: Any) -> dict[str, Any]:
    kwargs.setdefault("chat_id", GROUP)
    kwargs.setdefault("user_id", 42)
    return make_message_update(text, chat_type="supergroup", **kwargs)


def row(user_id: int = 42) -> DailyUserStat:
    return DailyUserStat.objects.get(chat_id=GROUP, user_id=user_id)


def test_it_commits_a_counted_message_in_one_kv_round_trip(store: RecordingStore) -> None:
    update = parse_update(group_message("one two three"))
    ctx = Context(
        update=update,
        sender=identify(update),
        router=get_router(),
        store=store,
        client=get_client(),
        foresight=foresee_count(update, store),  # the pipeline's part: the declaration
    )
    count_message(ctx)
    assert store.calls == {"apply_once": 1}  # no read, no other write: one atomic commit
    assert DailyUserStat.objects.get().word_count == 3  # then the live writer
    commit = {op.key: op for op in store.commits[0]}
    day = datetime.now(UTC).date().isoformat()
    assert commit[f"stats:messages:{GROUP}:{day}:42"].arg == "1"
    assert commit[f"stats:words:{GROUP}:{day}:42"].arg == "3"
    assert commit[f"activity:{GROUP}:{day}"].arg == "1"
    assert f"last_message:{GROUP}:42" in commit
    (buffer,) = [op for key, op in commit.items() if key.startswith(f"msg:{GROUP}:")]
    assert buffer.ttl_ms == 7 * DAY_MS
    assert commit[f"stats:messages:{GROUP}:{day}:42"].ttl_ms == 60 * DAY_MS
    assert [op.key for op in store.commits[0]] == sorted(commit)  # no lock-order deadlocks


def test_it_counts_days_and_hours_in_utc_from_the_message_date(
    store: RecordingStore, post_update: Any
) -> None:
    late_evening = int(datetime(2024, 3, 9, 23, 59, 30, tzinfo=UTC).timestamp())
    post_update(group_message("hi", date=late_evening))
    post_update(group_message("hi again", date=late_evening + 60))  # the next UTC day
    first, second = DailyUserStat.objects.order_by("day")
    assert (first.day.isoformat(), first.hour_23, first.message_count) == ("2024-03-09", 1, 1)
    assert (second.day.isoformat(), second.hour_00, second.word_count) == ("2024-03-10", 1, 2)
    assert store.get(f"activity:{GROUP}:2024-03-09") == 1


def test_it_counts_voice_and_video_notes_from_real_payloads(
    store: RecordingStore, post_update: Any
) -> None:
    post_update(group_message(None, voice=sample("voice.json")["voice"]))
    post_update(group_message(None, video_note=sample("video_note.json")["video_note"]))
    stats = row()
    assert (stats.message_count, stats.word_count) == (2, 0)
    assert (stats.voice_count, stats.voice_seconds) == (1, 5)
    assert (stats.video_note_count, stats.video_note_seconds) == (1, 1234)


def test_it_counts_a_redelivered_update_once(store: RecordingStore, post_update: Any) -> None:
    update = group_message("counted once")
    assert post_update(update)["X-Update-Outcome"] == "processed"
    assert post_update(update)["X-Update-Outcome"] == "duplicate"
    assert row().message_count == 1
    assert store.get(f"activity:{GROUP}:{row().day.isoformat()}") == 1


def test_it_counts_nothing_in_a_worker_that_finds_the_update_committed(
    store: RecordingStore,
) -> None:
    """A worker that stalled past its claim: another worker took the update over and counted
    it. The stalled one's commit finds the done-marker and it writes nothing at all."""
    update = parse_update(group_message("counted once"))
    for _worker in ("took over", "stalled"):
        ctx = Context(
            update=update,
            sender=identify(update),
            router=get_router(),
            store=store,
            client=get_client(),
            foresight=foresee_count(update, store),
        )
        count_message(ctx)
    assert row().message_count == 1
    assert store.get(f"activity:{GROUP}:{row().day.isoformat()}") == 1


def test_it_does_not_count_edits_commands_service_messages_or_bots(
    store: RecordingStore, post_update: Any
) -> None:
    post_update(make_edited_message_update("edited", chat_id=GROUP, chat_type="supergroup"))
    post_update(group_message("/help"))
    post_update(group_message(None, new_chat_title="New title"))
    post_update(group_message(None, left_chat_member=user(42)))
    bot_message = group_message("beep")
    bot_message["message"]["from"]["is_bot"] = True
    post_update(bot_message)
    channel = group_message("on behalf of the channel")
    channel["message"]["sender_chat"] = {"id": -100999, "type": "channel", "title": "News"}
    post_update(channel)
    post_update(make_message_update("private hello", chat_id=42, user_id=42))
    assert not DailyUserStat.objects.exists()
    assert not list(store.scan_all("stats:messages:"))


def test_it_counts_nothing_in_chats_that_are_not_allowed(
    store: RecordingStore, post_update: Any, settings: Any
) -> None:
    settings.ALLOWED_CHAT_IDS = [-100111]
    post_update(group_message("not here"))
    post_update(group_message("here", chat_id=-100111))
    assert list(DailyUserStat.objects.values_list("chat_id", flat=True)) == [-100111]


def test_it_keeps_text_in_the_buffer_only_when_the_operator_turns_it_on(
    store: RecordingStore, post_update: Any
) -> None:
    post_update(group_message("secret words"))
    StatsSettings.objects.update_or_create(pk=1, defaults={"store_message_text": True})
    counting_config_clear()
    post_update(group_message("kept words"))
    entries = [store.get(key) for key in store.scan_all(f"msg:{GROUP}:")]
    assert sorted(entry.get("t", "") for entry in entries) == ["", "kept words"]
    assert all(entry["u"] == 42 and entry["w"] == 2 for entry in entries)


def test_it_counts_profanity_and_violations_by_severity(
    store: RecordingStore, post_update: Any
) -> None:
    ViolationRule.objects.all().delete()
    ViolationRule.objects.create(
        name="Gambling", kind=ViolationKind.BANNED_WORDS, words="casino*", severity="high"
    )
    ViolationRule.objects.create(name="Links", kind=ViolationKind.NEW_MEMBER_LINK, severity="low")
    counting_config_clear()
    now = int(time.time())
    joined = group_message(None, user_id=7, new_chat_members=[user(43)])
    assert post_update(joined)["X-Update-Outcome"] == "processed"
    post_update(group_message("CASINO c@sinos fuuuck sh1t", date=now))
    post_update(group_message("see https://example.org", user_id=43, date=now))  # new member
    post_update(group_message("see https://example.org", user_id=44, date=now))  # not new
    old_join = group_message(None, user_id=7, new_chat_members=[user(45)], date=now - 40 * 86400)
    post_update(old_join)
    post_update(group_message("www.example.org", user_id=45, date=now))  # joined too long ago
    assert (row(42).profanity_count, row(42).violations_high) == (2, 1)
    assert (row(43).violations_low, row(44).violations_low, row(45).violations_low) == (1, 0, 0)
    assert not DailyUserStat.objects.filter(user_id=7).exists()  # a join is not a message
    assert store.get(keys.joined_key(GROUP, 43)) is not None
