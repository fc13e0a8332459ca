"""Anti-raid: more than N joins within T seconds turns on a strict mode (captcha for every new
member, or join requests only) for a while and alerts the admins once; end to end through the
webhook, against the fake Bot API."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from django.db import connections
from django.utils import timezone

from community.member_state import MemberStore
from community.services import raid
from telegram_bot.jobs.models import Job
from telegram_bot.jobs.runner import new_owner, run_due
from telegram_bot.state import KVStore
from tests.community.helpers import make_jobs_due, succeeded
from tests.community.members_helpers import (
    GROUP,
    join_update,
    leave_update,
    make_policy,
    processed,
    sent_to,
    service_update,
)
from tests.conftest import OWNER_ID
from tests.fakes.telegram import FAKE_TOKEN, FakeTelegramServer

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


# --- join requests only -----------------------------------------------------------------------
BOT_ID = int(FAKE_TOKEN.split(":")[0])


def removed(bot: FakeTelegramServer) -> list[int]:
    return [call.params["user_id"] for call in succeeded(bot, "banChatMember")]


def notices(bot: FakeTelegramServer) -> list[str]:
    return [text for text in sent_to(bot, GROUP) if text.startswith("Anti-raid")]


def test_join_requests_only_removes_direct_joins_and_points_to_the_request_link(
    bot: FakeTelegramServer, post_update: Any, memory_store: KVStore
) -> None:
    make_policy(
        raid_joins=1,
        raid_window_seconds=60,
        raid_strict_minutes=15,
        raid_mode="requests",
        goodbye_enabled=True,
        goodbye_text="Bye {first_name}",
    )
    start = window_start()
    processed(post_update, join_update(FIRST, date=start))
    crossing = join_update(FIRST + 1, date=start + 1)
    processed(post_update, crossing)

    [created] = succeeded(bot, "createChatInviteLink")
    assert created.params["creates_join_request"] is True
    assert abs(created.params["expire_date"] - (time.time() + 15 * 60)) < 30
    [link] = list(bot.results.invite_links)
    [alert] = alerts_to_owner(bot)
    assert "Only join requests are accepted for the next 15 minutes" in alert and link in alert
    # The join that crossed the threshold is removed (ban, then unban) and the chat is told.
    assert removed(bot) == [FIRST + 1]
    assert bot.chat_member(GROUP, FIRST + 1)["status"] == "left"
    [notice] = notices(bot)
    assert link in notice and "by request only" in notice

    processed(post_update, join_update(FIRST + 2, date=start + 2))
    processed(post_update, dict(crossing, update_id=crossing["update_id"] + 100_000))
    assert removed(bot) == [FIRST + 1, FIRST + 2, FIRST + 1]  # a re-delivery: again, harmless
    assert len(notices(bot)) == 1  # at most one notice a minute
    # Their removal's leave gets no goodbye; an ordinary member's leave does.
    processed(post_update, leave_update(FIRST + 2, date=start + 3))
    processed(post_update, leave_update(FIRST, date=start + 3))
    assert [t for t in sent_to(bot, GROUP) if t.startswith("Bye")] == ["Bye Ann"]

    # Approved through a join request, or through the link asking for one: welcome as usual.
    processed(post_update, join_update(FIRST + 3, date=start + 3, via_join_request=True))
    invite = {key: value for key, value in created_link(bot, link).items() if key != "chat_id"}
    processed(post_update, join_update(FIRST + 4, date=start + 4, invite_link=invite))
    # A service message does not say how they joined: its chat_member twin decides.
    processed(post_update, service_update(joined=[FIRST + 5], date=start + 5))
    assert FIRST + 5 not in removed(bot)
    processed(post_update, join_update(FIRST + 5, date=start + 5))
    assert removed(bot) == [FIRST + 1, FIRST + 2, FIRST + 1, FIRST + 5]
    assert challenged(bot) == []  # no captcha in this mode
    assert len(succeeded(bot, "createChatInviteLink")) == 1

    # The mode ends: its job revokes the link and deletes the notice; joins are free again.
    notice_id = MemberStore(memory_store).last_notice(GROUP, link)
    assert bot.results.stored_message(GROUP, notice_id or 0) is not None
    memory_store.delete(f"members:strict:{GROUP}")  # its TTL ran out
    [end] = Job.objects.filter(kind="community.raid_end")
    assert abs((end.next_attempt - timezone.now()).total_seconds() - 15 * 60) < 30
    make_jobs_due()
    assert run_due(new_owner()) == 1
    [revoked] = succeeded(bot, "revokeChatInviteLink")
    assert revoked.params == {"chat_id": GROUP, "invite_link": link}
    assert bot.results.invite_links[link]["is_revoked"]
    assert bot.results.stored_message(GROUP, notice_id or 0) is None  # deleted
    processed(post_update, join_update(FIRST + 9, date=start + 1000))
    assert FIRST + 9 not in removed(bot)


def created_link(bot: FakeTelegramServer, link: str) -> dict[str, Any]:
    return dict(bot.results.invite_links[link])


def test_join_requests_only_without_the_right_to_invite_falls_back_to_the_captcha(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    bot.set_chat_member(
        GROUP, BOT_ID, "administrator", is_bot=True, can_restrict_members=True
    )  # no can_invite_users
    make_policy(raid_joins=1, raid_window_seconds=60, raid_mode="requests")
    start = window_start()
    processed(post_update, join_update(FIRST, date=start))
    processed(post_update, join_update(FIRST + 1, date=start + 1))
    processed(post_update, join_update(FIRST + 2, date=start + 2))
    [alert] = alerts_to_owner(bot)
    assert "could not create a join-request link" in alert and "captcha" in alert
    assert removed(bot) == [] and challenged(bot) == [FIRST + 1, FIRST + 2]
    # Refused for good: not asked again for every join.
    assert len(bot.calls_to("createChatInviteLink")) == 1


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(60)
def test_racing_joins_create_one_link_and_revoke_the_other(
    bot: FakeTelegramServer, memory_store: KVStore
) -> None:
    store = MemberStore(memory_store)
    assert store.start_strict(GROUP, int(time.time()), 15, "requests")
    bot.delay_next("createChatInviteLink", 0.3, times=3)  # all are inside the call at once
    links: list[str] = []
    start = threading.Barrier(3)

    def join() -> None:
        try:
            start.wait()
            links.append(raid.request_link(GROUP, store))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=join) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stored = store.get_strict(GROUP)
    assert stored is not None and stored.link
    assert links == [stored.link] * 3  # every join points to the one stored link
    assert len(succeeded(bot, "createChatInviteLink")) == 3
    assert {c.params["invite_link"] for c in succeeded(bot, "revokeChatInviteLink")} == (
        set(bot.results.invite_links) - {stored.link}
    )


def test_a_removal_retried_later_leaves_a_moderators_ban_in_place(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    """The removal of a raider met a 429 and went to the retry job; before it ran, a
    moderator banned that raider. The job banned and unbanned: the moderator's ban was
    lifted. Now it asks Telegram first and leaves the ban; a raider not banned meanwhile is
    removed by the job as before (a short ban, then the unban)."""
    make_policy(raid_joins=1, raid_window_seconds=60, raid_strict_minutes=15, raid_mode="requests")
    start = window_start()
    processed(post_update, join_update(FIRST, date=start))
    bot.fail_next("banChatMember", status=429, retry_after=1, description="Too Many Requests")
    processed(post_update, join_update(FIRST + 1, date=start + 1))
    bot.fail_next("banChatMember", status=429, retry_after=1, description="Too Many Requests")
    processed(post_update, join_update(FIRST + 2, date=start + 2))
    assert Job.objects.filter(kind="community.raid_remove").count() == 2
    bot.set_chat_member(GROUP, FIRST + 1, "kicked", until_date=0)  # a moderator's /ban
    # Describing a member describes the chat: the bot is then an admin only if said so.
    bot.set_chat_member(GROUP, 123456789, "administrator", is_bot=True, can_restrict_members=True)
    make_jobs_due()
    run_due(new_owner())
    run_due(new_owner())
    assert bot.chat_member(GROUP, FIRST + 1)["status"] == "kicked"  # still banned
    assert bot.chat_member(GROUP, FIRST + 2)["status"] == "left"  # removed, may ask to join
    [ban] = [c for c in succeeded(bot, "banChatMember") if c.params["user_id"] == FIRST + 2]
    assert 0 < ban.params["until_date"] - time.time() <= 60
