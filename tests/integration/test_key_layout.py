"""The compact key layout (issue 45, ``STATE_KEY_LAYOUT``): a group message leaves its
done-marker in a group of 100 (``upd:d:<id // 100>#<id % 100>``), no unit marker beside it, and
its buffer entry in a group of 100 messages of its chat; markers and entries of the legacy
layout, written before an upgrade, keep working until they expire."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from django.test import override_settings

from stats.config import counting_config_clear
from stats.privacy import _buffer
from telegram_bot.pipeline import idempotency
from telegram_bot.pipeline.process import Outcome, process_update
from telegram_bot.state import KVStore, override_store
from tests.builders import make_message_update
from tests.fakes.telegram import FakeTelegramServer

GROUP = -100777
DONE = {"s": "done"}

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def fresh_config() -> Iterator[None]:
    counting_config_clear()  # the layout is read into the statistics' cached config
    yield
    counting_config_clear()


def message(update_id: int, message_id: int, user_id: int = 42) -> dict[str, Any]:
    update = make_message_update("three small words", chat_id=GROUP, user_id=user_id)
    update["update_id"] = update_id
    update["message"]["message_id"] = message_id
    update["message"]["chat"]["type"] = "supergroup"
    return update


def messages_counted(kv: KVStore) -> int:
    """The member's KV message counter of today (the database's rows may be written behind)."""
    return int(kv.get(f"stats:messages:{GROUP}:{datetime.now(UTC).date().isoformat()}:42") or 0)


def test_a_group_message_leaves_a_packed_done_marker_and_buffer_entry_only(
    bot: FakeTelegramServer, kv: KVStore
) -> None:
    with override_store(kv):
        assert process_update(message(7_000_012_345, 1_234)) == Outcome.PROCESSED
        assert kv.get("upd:d:70000123#45") == DONE
        assert kv.get("upd:7000012345") is None  # no claim written: the one step
        assert kv.get("upd:7000012345:stats.count") is None  # the done-marker says it
        assert idempotency.read_marker(kv, 7_000_012_345) == DONE
        entry = kv.get(f"msg:{GROUP}:12#34")
        assert entry is not None and entry["u"] == 42 and entry["w"] == 3 and "at" in entry
        assert "k" not in entry and "t" not in entry  # a text; the text itself is not kept
        assert process_update(message(7_000_012_345, 1_234)) == Outcome.DUPLICATE
        assert messages_counted(kv) == 1


def test_the_legacy_layout_is_the_baseline_before_it(bot: FakeTelegramServer, kv: KVStore) -> None:
    with override_settings(STATE_KEY_LAYOUT="legacy"), override_store(kv):
        assert process_update(message(7_000_012_346, 1_235)) == Outcome.PROCESSED
        assert kv.get("upd:7000012346") == DONE
        assert kv.get("upd:7000012346:stats.count") == DONE
        assert kv.get("upd:d:70000123#46") is None
        (key,) = [key for key, _ in _buffer(kv, 42)]
        assert key.endswith(":1235")
        assert process_update(message(7_000_012_346, 1_235)) == Outcome.DUPLICATE
        assert messages_counted(kv) == 1


def test_markers_and_entries_of_the_legacy_layout_work_after_the_upgrade(
    bot: FakeTelegramServer, kv: KVStore
) -> None:
    """Written by the version before (legacy layout), read by this one (compact): a done
    update stays done, a unit that committed does not commit again, and the buffer's
    entries of both layouts are the member's for an export or an erasure."""
    with override_settings(STATE_KEY_LAYOUT="legacy"), override_store(kv):
        assert process_update(message(7_000_020_001, 2_001)) == Outcome.PROCESSED
    counting_config_clear()
    with override_store(kv):
        assert process_update(message(7_000_020_001, 2_001)) == Outcome.DUPLICATE
        # A letter's committed unit, marked by the version before: not counted again.
        kv.set("upd:7000020002:stats.count", DONE, 60_000)
        assert process_update(message(7_000_020_002, 2_002)) == Outcome.PROCESSED
        assert process_update(message(7_000_020_003, 2_003)) == Outcome.PROCESSED
        assert messages_counted(kv) == 2  # 2001 once, 2002 not again, 2003
        found = sorted(key for key, _ in _buffer(kv, 42))
        assert len(found) == 2 and found[0].endswith(":2001")  # msg:{chat}:{ts}:{id}
        assert found[1] == f"msg:{GROUP}:20#3"  # 2002's unit had committed: nothing again
        assert process_update(message(7_000_020_003, 2_003)) == Outcome.DUPLICATE
