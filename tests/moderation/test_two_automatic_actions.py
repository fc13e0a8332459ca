"""One message, two automatic actions: it crosses the flood limit and brings its sender to the
warning limit (or a violation's own action). Each is recorded under its own cause; the second
is taken when it is stronger than what the member is under (Telegram's getChatMember), and
skipped, with the chat told so, when it is not: a ban is never turned into a mute."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from django.utils import timezone

from moderation import flood
from moderation.models import ChatSettings
from stats.config import counting_config_clear
from stats.models import ViolationKind, ViolationRule
from telegram_bot import violations
from telegram_bot.jobs.models import Job, JobStatus
from telegram_bot.jobs.runner import run_due
from telegram_bot.models import AuditEntry
from tests.builders import next_update_id
from tests.fakes.telegram import FakeTelegramServer
from tests.moderation.helpers import (
    GROUP,
    MEMBER,
    answers,
    describe_group,
    member_message,
    ok_calls,
    run,
)
from tests.moderation.test_violations import stats_rules

pytestmark = pytest.mark.django_db
NOW = 1_800_000_000.0
DAY = 24 * 3600


@pytest.fixture(autouse=True)
def setup(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(flood, "clock", lambda: NOW)  # one flood window for the whole test
    counting_config_clear()
    registered = dict(violations._classifiers)
    violations.register_classifier("stats", stats_rules)
    ViolationRule.objects.create(
        name="casino", kind=ViolationKind.BANNED_WORDS, words="casino*", severity="medium"
    )
    counting_config_clear()
    yield
    violations._classifiers.clear()
    violations._classifiers.update(registered)
    counting_config_clear()


def say(text: str, times: int = 1) -> int:
    for _ in range(times):
        message = member_message()
        message["text"] = text
        update_id = next_update_id()
        run({"update_id": update_id, "message": message})
    return update_id


def causes(update_id: int) -> list[tuple[str, str, str]]:
    return list(
        AuditEntry.objects.filter(update_id=update_id)
        .order_by("id")
        .values_list("action", "cause", "outcome")
    )


def test_the_warning_limits_day_long_mute_follows_the_flood_mute(bot: FakeTelegramServer) -> None:
    describe_group(bot)
    ChatSettings.objects.create(
        chat_id=GROUP,
        flood_messages=3,
        flood_action_seconds=600,
        violation_medium="warn",
        warn_limit=1,
        warn_action="mute",
        warn_action_seconds=DAY,
    )
    say("hello", times=3)
    update_id = say("try casinos now")  # the 4th message: flood, and the first warning
    mutes = ok_calls(bot, "restrictChatMember")
    assert [m.params["until_date"] - int(time.time()) for m in mutes][-1] in range(
        DAY - 10, DAY + 1
    )
    assert len(mutes) == 2
    assert answers(bot) == [
        "Mallory is muted for 10m: flooding",
        "Mallory is warned (1/1): medium violation Mallory is muted for 1d: 1 warning",
    ]
    assert causes(update_id) == [
        ("mute", "flood", "done"),
        ("warn", "violation", "done"),
        ("mute", "warn_limit", "done"),
    ]
    assert bot.chat_member(GROUP, MEMBER)["until_date"] - int(time.time()) in range(
        DAY - 10, DAY + 1
    )


def test_a_flood_ban_is_not_turned_into_a_mute(bot: FakeTelegramServer) -> None:
    describe_group(bot)
    ChatSettings.objects.create(
        chat_id=GROUP,
        flood_messages=3,
        flood_action="ban",
        flood_action_seconds=DAY,
        violation_medium="mute",
        violation_action_seconds=600,
    )
    say("hello", times=3)
    update_id = say("try casinos now")
    assert len(ok_calls(bot, "banChatMember")) == 1
    assert ok_calls(bot, "restrictChatMember") == []  # restricting would have lifted the ban
    assert bot.chat_member(GROUP, MEMBER)["status"] == "kicked"
    assert answers(bot) == ["Mallory is banned for 1d: flooding", "Mallory is already banned."]
    assert causes(update_id) == [("ban", "flood", "done"), ("mute", "violation", "refused")]


def test_a_shorter_mute_does_not_cut_a_longer_one(bot: FakeTelegramServer) -> None:
    describe_group(bot)
    ChatSettings.objects.create(
        chat_id=GROUP,
        flood_messages=3,
        flood_action_seconds=DAY,
        violation_medium="mute",
        violation_action_seconds=600,
    )
    say("hello", times=3)
    say("try casinos now")
    assert len(ok_calls(bot, "restrictChatMember")) == 1
    assert bot.chat_member(GROUP, MEMBER)["until_date"] - int(time.time()) in range(
        DAY - 10, DAY + 1
    )
    assert answers(bot) == ["Mallory is muted for 1d: flooding", "Mallory is already muted."]


def test_a_flood_mute_waiting_out_a_rate_limit_does_not_cut_the_longer_one(
    bot: FakeTelegramServer,
) -> None:
    """The flood's 10-minute mute meets a 429 and goes to a job; the warning limit's day-long
    mute goes through; when the job runs, the member is under the longer one: it is skipped."""
    describe_group(bot)
    ChatSettings.objects.create(
        chat_id=GROUP,
        flood_messages=3,
        flood_action_seconds=600,
        violation_medium="warn",
        warn_limit=1,
        warn_action_seconds=DAY,
    )
    say("hello", times=3)
    bot.fail_next("restrictChatMember", status=429, retry_after=1)
    update_id = say("try casinos now")
    job = Job.objects.get(kind="moderation.act")
    assert job.payload["cause"] == "flood"
    Job.objects.filter(pk=job.pk).update(next_attempt=timezone.now())
    assert run_due("test-worker") == 1
    assert Job.objects.get(pk=job.pk).status == JobStatus.SUCCEEDED
    assert len(ok_calls(bot, "restrictChatMember")) == 1  # the day-long one only
    assert bot.chat_member(GROUP, MEMBER)["until_date"] - int(time.time()) in range(
        DAY - 10, DAY + 1
    )
    assert causes(update_id) == [
        ("warn", "violation", "done"),
        ("mute", "warn_limit", "done"),
        ("mute", "flood", "refused"),
    ]
