"""How a rule acts: a deletion Telegram asks to retry goes to a job that deletes once and
records it; the bots lock removes bots a member adds, not those an admin adds."""

from __future__ import annotations

from typing import Any

import pytest

from telegram_bot.jobs.models import Job, JobStatus
from telegram_bot.jobs.runner import run_due
from telegram_bot.models import AuditEntry
from tests.builders import user
from tests.community.helpers import make_jobs_due
from tests.fakes.telegram import FakeTelegramServer
from tests.moderation.helpers import CHAT_OWNER, GROUP, MEMBER, describe_group, ok_calls
from tests.rules.helpers import command, said, send

pytestmark = pytest.mark.django_db
SPAMBOT = 777000111


@pytest.fixture(autouse=True)
def group(bot: FakeTelegramServer) -> FakeTelegramServer:
    describe_group(bot)
    return bot


def test_a_deletion_telegram_asks_to_retry_runs_once_in_a_job(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    command(post_update, "/addblocklist scam")
    bot.fail_next("deleteMessage", status=429, retry_after=1)
    message = said("a scam")
    send(post_update, message)
    assert ok_calls(bot, "deleteMessage") == []
    assert not AuditEntry.objects.filter(action="delete").exists()
    [job] = Job.objects.filter(kind="rules.delete")
    make_jobs_due()
    assert run_due("test-worker") == 1
    [deleted] = ok_calls(bot, "deleteMessage")
    assert deleted.params["message_id"] == message["message_id"]
    entry = AuditEntry.objects.get(action="delete")
    assert (entry.cause, entry.target_id) == ("blocklist", MEMBER)
    assert "after retry" in entry.detail
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED


def bots_joined(adder: int, *bots: int) -> dict[str, Any]:
    members = [{**user(bot_id, f"Bot{bot_id}"), "is_bot": True} for bot_id in bots]
    return said(None, user_id=adder, name="Adder", new_chat_members=members)


def test_the_bots_lock_removes_bots_a_member_adds(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    command(post_update, "/lock bots")
    send(post_update, bots_joined(CHAT_OWNER, SPAMBOT))
    assert ok_calls(bot, "banChatMember") == []
    send(post_update, bots_joined(MEMBER, SPAMBOT))
    [ban] = ok_calls(bot, "banChatMember")
    assert (ban.params["chat_id"], ban.params["user_id"]) == (GROUP, SPAMBOT)
    assert ok_calls(bot, "unbanChatMember")  # a kick: they may be added again by an admin
    entry = AuditEntry.objects.get(action="kick")
    assert (entry.cause, entry.target_id) == ("lock", SPAMBOT)
