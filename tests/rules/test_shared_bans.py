"""Shared ban lists through the webhook: an owner groups three of their groups; a /fban in one
bans the member in all three, each chat once, one chat refusing for a while (retried, applied
once); a banned member joining any of them is removed at once, without a welcome; /unfban
lifts it everywhere; who may do what."""

from __future__ import annotations

from typing import Any

import pytest

from moderation.rules import fedban
from moderation.rules.models import BanList, BanListChat, SharedBan, SharedBanApplied
from telegram_bot.jobs.models import Job, JobStatus
from telegram_bot.jobs.runner import new_owner, run_due
from telegram_bot.models import AuditEntry
from tests.builders import chat, make_message, next_update_id
from tests.community.helpers import make_jobs_due
from tests.community.members_helpers import join_update, make_policy
from tests.fakes.telegram import FakeTelegramServer
from tests.moderation.helpers import (
    BOT_ID,
    CHAT_OWNER,
    FULL,
    GROUP,
    MEMBER,
    MOD,
    answers,
    describe_group,
    ok_calls,
)
from tests.rules.helpers import command, outcome

pytestmark = pytest.mark.django_db
GROUPS = (GROUP, -100778, -100779)


@pytest.fixture(autouse=True)
def groups(bot: FakeTelegramServer, settings: Any) -> FakeTelegramServer:
    settings.JOB_RETRY_BASE_DELAY = 0.01
    settings.JOB_RETRY_MAX_DELAY = 0.02
    describe_group(bot)
    for chat_id in GROUPS[1:]:
        bot.set_chat(chat_id, "supergroup", title=f"Group {chat_id}")
        bot.set_chat_member(chat_id, CHAT_OWNER, "creator", first_name="Olga")
        bot.set_chat_member(chat_id, BOT_ID, "administrator", is_bot=True, **FULL)
    return bot


def in_chat(post_update: Any, chat_id: int, text: str, sender: int = CHAT_OWNER) -> str:
    message = make_message(text, chat_id=chat_id, user_id=sender)
    message["chat"] = chat(chat_id, "supergroup", f"Group {chat_id}")
    return outcome(post_update, {"update_id": next_update_id(), "message": message})


def private(post_update: Any, user_id: int, text: str) -> str:
    message = make_message(text, chat_id=user_id, user_id=user_id, chat_type="private")
    return outcome(post_update, {"update_id": next_update_id(), "message": message})


def said_to(bot: FakeTelegramServer, chat_id: int) -> list[str]:
    calls = ok_calls(bot, "sendMessage")
    return [c.params["text"] for c in calls if c.params["chat_id"] == chat_id]


def run_jobs() -> None:
    for _ in range(5):
        make_jobs_due()
        run_due(new_owner())
        if not Job.objects.filter(status=JobStatus.QUEUED).exists():
            return


def banned_in(bot: FakeTelegramServer, user_id: int = MEMBER) -> list[int]:
    calls = ok_calls(bot, "banChatMember")
    return sorted(c.params["chat_id"] for c in calls if c.params["user_id"] == user_id)


def make_list(post_update: Any, bot: FakeTelegramServer) -> BanList:
    private(post_update, CHAT_OWNER, "/newfed Cat groups")
    ban_list = BanList.objects.get()
    assert said_to(bot, CHAT_OWNER)[-1].startswith(
        f"Created the shared ban list Cat groups (id {ban_list.pk})"
    )
    for chat_id in GROUPS:
        in_chat(post_update, chat_id, f"/joinfed {ban_list.pk}")
        assert said_to(bot, chat_id)[-1] == "This group now shares the bans of Cat groups."
    return ban_list


def test_a_ban_in_one_chat_applies_to_all_once_with_a_chat_failing_for_a_while(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    make_list(post_update, bot)
    bot.fail_next("banChatMember", times=2, status=429, retry_after=1)
    command(post_update, f"/fban {MEMBER} spam bot", sender=MOD)
    assert answers(bot)[-1] == f"{MEMBER} is banned in the 3 chats of Cat groups."
    run_jobs()
    assert banned_in(bot) == sorted(GROUPS)
    run_jobs()  # nothing left to do
    [job.delete() for job in Job.objects.filter(kind=fedban.JOB)]
    ban = SharedBan.objects.get()
    for chat_id in GROUPS:  # a job run again (a crash after its call) changes nothing
        fedban.apply_job({"ban": ban.pk, "chat_id": chat_id, "generation": 1}, _client())
    assert banned_in(bot) == sorted(GROUPS)
    entries = AuditEntry.objects.filter(action="ban", cause="fban", outcome="done")
    assert sorted(entries.values_list("chat_id", flat=True)) == sorted(GROUPS)
    assert SharedBanApplied.objects.count() == 3
    assert AuditEntry.objects.filter(action="rules.fban", actor_id=MOD).count() == 1
    command(post_update, f"/fban {MEMBER} spam bot", sender=MOD)
    assert answers(bot)[-1] == f"{MEMBER} is banned in Cat groups already."


def test_a_banned_member_joining_any_chat_is_removed_without_a_welcome(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    make_list(post_update, bot)
    make_policy(chat_id=GROUPS[2], welcome_enabled=True, welcome_text="Hi {first_name}")
    command(post_update, f"/fban {MEMBER}", sender=MOD)
    run_jobs()
    before, said_before = banned_in(bot), said_to(bot, GROUPS[2])
    join = join_update(MEMBER, chat_id=GROUPS[2])
    outcome(post_update, join)
    outcome(post_update, join)  # re-delivered
    assert banned_in(bot) == sorted([*before, GROUPS[2]])
    assert said_to(bot, GROUPS[2]) == said_before
    assert AuditEntry.objects.filter(chat_id=GROUPS[2], cause="fban").count() == 2  # list + join
    outcome(post_update, join_update(MEMBER + 1, chat_id=GROUPS[2], first_name="Bea"))
    assert said_to(bot, GROUPS[2]) == [*said_before, "Hi Bea"]


def test_unfban_lifts_it_everywhere_and_a_new_chat_gets_the_list(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    ban_list = make_list(post_update, bot)
    command(post_update, f"/fban {MEMBER}", sender=MOD)
    run_jobs()
    in_chat(post_update, GROUPS[1], "/leavefed")
    assert said_to(bot, GROUPS[1])[-1] == "This group left the shared ban list Cat groups."
    command(post_update, f"/unfban {MEMBER}", sender=MOD)
    assert answers(bot)[-1] == f"{MEMBER} is unbanned in the 2 chats of Cat groups."
    run_jobs()
    unbanned = sorted(c.params["chat_id"] for c in ok_calls(bot, "unbanChatMember"))
    assert unbanned == sorted((GROUPS[0], GROUPS[2]))
    command(post_update, f"/fban {MEMBER + 1} flood", sender=MOD)
    in_chat(post_update, GROUPS[1], f"/joinfed {ban_list.pk}")
    run_jobs()
    assert GROUPS[1] in banned_in(bot, MEMBER + 1)
    in_chat(post_update, GROUPS[1], "/fedinfo")
    assert said_to(bot, GROUPS[1])[-1] == (
        f"Shared ban list Cat groups (id {ban_list.pk}): 3 chats, 1 members banned."
    )


def test_who_may_do_what(bot: FakeTelegramServer, post_update: Any) -> None:
    ban_list = make_list(post_update, bot)
    other = BanList.objects.create(name="Theirs", owner_id=999)
    in_chat(post_update, GROUP, f"/joinfed {ban_list.pk}")
    already = "This group is in the list Cat groups already (/leavefed first)."
    assert said_to(bot, GROUP)[-1] == already
    in_chat(post_update, GROUP, "/leavefed")
    in_chat(post_update, GROUP, f"/joinfed {other.pk}")
    assert said_to(bot, GROUP)[-1] == "That list is not yours."
    in_chat(post_update, GROUP, f"/joinfed {ban_list.pk}", sender=MOD)
    assert said_to(bot, GROUP)[-1] == "Only the group's owner can add it to a shared ban list."
    in_chat(post_update, GROUP, "/joinfed nope")
    assert said_to(bot, GROUP)[-1].startswith("Say which list")
    command(post_update, f"/fban {MEMBER}", sender=MEMBER)
    assert answers(bot)[-1] == "Only the chat's admins can do that."
    command(post_update, f"/fban {MOD}", sender=CHAT_OWNER)
    assert answers(bot)[-1].startswith("This group is in no shared ban list")
    private(post_update, MEMBER, "/newfed " + "x" * 65)
    assert said_to(bot, MEMBER)[-1].startswith("Give the list a name")
    assert not SharedBan.objects.exists()
    assert BanListChat.objects.filter(chat_id=GROUP).count() == 0


def _client() -> Any:
    from telegram_bot.bot import get_client

    return get_client()
