"""Anti-raid: more than N joins within T seconds turns on a strict mode (captcha for every new
member) for a while and alerts the admins once; end to end through the webhook."""

from __future__ import annotations

import time
from typing import Any

from community.member_state import MemberStore
from telegram_bot.state import KVStore
from tests.community.members_helpers import join_update, make_policy, processed, sent_to
from tests.conftest import OWNER_ID
from tests.fakes.telegram import FakeTelegramServer

FIRST = 4000


def window_start(seconds: int = 60) -> int:
    return (int(time.time()) // seconds) * seconds


def challenged(bot: FakeTelegramServer) -> list[int]:
    return [call.params["user_id"] for call in bot.calls_to("restrictChatMember")]


def alerts_to_owner(bot: FakeTelegramServer) -> list[str]:
    return [text for text in sent_to(bot, OWNER_ID) if text.startswith("Anti-raid")]


def test_a_burst_of_joins_turns_the_strict_mode_on_and_alerts_once(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    make_policy(raid_joins=3, raid_window_seconds=60, raid_strict_minutes=15)
    start = window_start()
    for offset in range(3):
        processed(post_update, join_update(FIRST + offset, date=start + offset))
    assert challenged(bot) == [] and alerts_to_owner(bot) == []
    processed(post_update, join_update(FIRST + 3, date=start + 3))
    processed(post_update, join_update(FIRST + 4, date=start + 4))
    [alert] = alerts_to_owner(bot)
    assert "more than 3 joins within 60 s" in alert and "15 minutes" in alert
    # The join that crossed the threshold and every later one get the captcha.
    assert challenged(bot) == [FIRST + 3, FIRST + 4]


def test_redelivered_joins_do_not_count_towards_a_raid(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    make_policy(raid_joins=3, raid_window_seconds=60)
    start = window_start()
    for offset in range(3):
        join = join_update(FIRST + offset, date=start + offset)
        processed(post_update, join)
        processed(post_update, dict(join, update_id=join["update_id"] + 100_000))
    assert alerts_to_owner(bot) == [] and challenged(bot) == []


def test_joins_spread_over_time_are_no_raid(bot: FakeTelegramServer, post_update: Any) -> None:
    make_policy(raid_joins=3, raid_window_seconds=60)
    start = window_start() - 600
    for offset in range(6):
        processed(post_update, join_update(FIRST + offset, date=start + offset * 61))
    assert alerts_to_owner(bot) == [] and challenged(bot) == []


def test_a_raid_across_a_window_boundary_is_seen(bot: FakeTelegramServer, post_update: Any) -> None:
    make_policy(raid_joins=3, raid_window_seconds=60)
    boundary = window_start()
    for offset, at in enumerate((boundary - 3, boundary - 2, boundary - 1, boundary, boundary + 1)):
        processed(post_update, join_update(FIRST + offset, date=at))
    assert len(alerts_to_owner(bot)) == 1
    assert challenged(bot) == [FIRST + 3, FIRST + 4]


def test_the_strict_mode_ends(
    bot: FakeTelegramServer, post_update: Any, memory_store: KVStore
) -> None:
    make_policy(raid_joins=1, raid_window_seconds=60)
    start = window_start()
    processed(post_update, join_update(FIRST, date=start))
    processed(post_update, join_update(FIRST + 1, date=start + 1))
    assert MemberStore(memory_store).strict(-100777)
    memory_store.delete("members:strict:-100777")  # its TTL ran out
    processed(post_update, join_update(FIRST + 2, date=start + 200))
    assert challenged(bot) == [FIRST + 1]


def test_anti_raid_off(bot: FakeTelegramServer, post_update: Any) -> None:
    make_policy(raid_joins=0)
    start = window_start()
    for offset in range(20):
        processed(post_update, join_update(FIRST + offset, date=start))
    assert alerts_to_owner(bot) == [] and challenged(bot) == []
