"""Members and the join-request question against what a review found: a rejoin within the
second of a captcha removal, a mute from before the join, a leave during the captcha,
placeholders in names, two questions at once. Each test failed on the code before its fix."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from community.selectors import join_request_get
from telegram_bot.jobs.models import Job, JobStatus
from telegram_bot.jobs.runner import new_owner, run_due
from tests.builders import chat, make_join_request_update, make_message_update, next_update_id
from tests.community.helpers import make_jobs_due, press_update, question_policy, succeeded
from tests.community.members_helpers import (
    GROUP,
    chat_member_update,
    join_update,
    make_policy,
    member,
    processed,
    sent_to,
)
from tests.community.test_members_captcha import right_and_wrong
from tests.fakes.telegram import FAKE_TOKEN, FakeTelegramServer

ANN = 3001
BOT_ID = int(FAKE_TOKEN.split(":")[0])


def restricted(user_id: int, *, is_member: bool, first_name: str = "Ann") -> dict[str, Any]:
    """A ChatMember "restricted" that cannot send messages (muted), in or out of the chat."""
    return member(user_id, "restricted", first_name, is_member=is_member)


def bot_may_restrict(bot: FakeTelegramServer) -> None:
    bot.set_chat_member(
        GROUP,
        BOT_ID,
        "administrator",
        is_bot=True,
        can_restrict_members=True,
        can_delete_messages=True,
        can_invite_users=True,
    )


def muted_in_fake(bot: FakeTelegramServer, user_id: int = ANN) -> bool:
    state = bot.chat_member(GROUP, user_id)
    return state["status"] == "restricted" and not state.get("can_send_messages")


def mutes(bot: FakeTelegramServer, user_id: int = ANN) -> int:
    """restrictChatMember calls that take the member's right to write away (captcha)."""
    return sum(
        1
        for call in succeeded(bot, "restrictChatMember")
        if call.params["user_id"] == user_id
        and call.params["permissions"].get("can_send_messages") is False
    )


# --- 1. a rejoin in the same second as the removal escapes the captcha ---------------------------
def test_a_rejoin_within_the_second_of_the_captcha_removal_is_challenged_again(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    """A raid script presses a wrong button (or lets the deadline pass), is removed (ban, then
    unban) and joins again at once. Telegram's dates are whole seconds: the leave of the removal
    and the new join share one. The new join must get a new challenge, not pass unchallenged."""
    make_policy(captcha_enabled=True)
    now = int(time.time())
    processed(post_update, join_update(ANN, date=now - 5))
    assert mutes(bot) == 1
    _, wrong = right_and_wrong(bot)
    processed(post_update, press_update(wrong, user_id=ANN))
    assert [c.params["user_id"] for c in succeeded(bot, "banChatMember")] == [ANN]
    # What Telegram sends for the removal (ban, then unban) and the immediate rejoin.
    removal = chat_member_update(ANN, "restricted", "kicked", date=now, by=BOT_ID)
    removal["chat_member"]["new_chat_member"]["until_date"] = 0
    processed(post_update, removal)
    processed(post_update, chat_member_update(ANN, "kicked", "left", date=now, by=BOT_ID))
    processed(post_update, join_update(ANN, date=now))
    # The ban lifted the first challenge's restriction: the new stay must be challenged.
    assert mutes(bot) == 2, "the rejoin was taken for an old event and not challenged"


# --- 4. placeholders inside a member's name are expanded -----------------------------------------
def test_a_placeholder_in_a_members_name_is_not_expanded(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    """render() replaces the placeholders one after the other, so a value put in by an earlier
    one (the member's name) is itself searched for the later ones. A name of nine "{rules}"
    multiplies the rules into the welcome (past Telegram's 4,096: no welcome at all)."""
    make_policy(welcome_enabled=True, welcome_text="Hi {first_name}!", rules_text="Be kind. " * 100)
    processed(post_update, join_update(ANN, first_name="{rules}"))
    [call] = succeeded(bot, "sendMessage")
    assert call.params["text"] == "Hi {rules}!", call.params["text"][:80]


# --- 2. the captcha's "passed" lifts a moderator's mute -----------------------------------------
def test_passing_the_captcha_does_not_lift_a_mute_the_member_had_before_joining(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    """Muted by a moderator, a member leaves and comes back: Telegram keeps the restriction
    (``restricted`` with ``is_member`` false, then true). The captcha restricts them again and,
    on the right button, grants every permission: the mute is gone."""
    bot_may_restrict(bot)
    bot.set_chat_member(GROUP, ANN, "restricted", first_name="Ann", is_member=True)  # muted
    assert muted_in_fake(bot)
    make_policy(captcha_enabled=True)
    rejoin = chat_member_update(ANN, "left", "restricted")
    rejoin["chat_member"]["old_chat_member"] = restricted(ANN, is_member=False)
    rejoin["chat_member"]["new_chat_member"] = restricted(ANN, is_member=True)
    assert processed(post_update, rejoin) == "processed"
    right, _ = right_and_wrong(bot)
    processed(post_update, press_update(right, user_id=ANN))
    assert muted_in_fake(bot), f"the moderator's mute was lifted: {bot.chat_member(GROUP, ANN)}"


# --- 3. a member who leaves during the captcha stays restricted for good -------------------------
def test_a_member_who_left_during_the_captcha_is_not_muted_when_let_back_in(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    """The outcome ``left`` deletes the challenge and lifts nothing. Telegram keeps the
    restriction of a member who left; back through a join request (no captcha by design), the
    member is welcomed and cannot write, with no challenge nor job left to free them."""
    bot_may_restrict(bot)
    make_policy(captcha_enabled=True, welcome_enabled=True, welcome_text="Hi {first_name}")
    now = int(time.time())
    processed(post_update, join_update(ANN, date=now - 60))
    assert muted_in_fake(bot)  # the captcha's restriction
    # Telegram keeps the restriction of a member who leaves.
    bot.set_chat_member(GROUP, ANN, "restricted", first_name="Ann", is_member=False)
    leave = chat_member_update(ANN, "restricted", "restricted", date=now - 30)
    leave["chat_member"]["new_chat_member"] = restricted(ANN, is_member=False)
    processed(post_update, leave)
    assert not muted_in_fake(bot)  # the captcha's restriction is lifted at the leave
    # Back, approved through a join request.
    back = chat_member_update(ANN, "left", "member", date=now, via_join_request=True)
    processed(post_update, back)
    bot.set_chat_member(GROUP, ANN, "member", first_name="Ann")
    assert sent_to(bot)[-1] == "Hi Ann"
    make_jobs_due()
    run_due(new_owner())
    assert not muted_in_fake(bot), "welcomed, yet still muted by the captcha of the earlier stay"


def test_a_mute_with_an_end_is_given_back_with_that_end_and_an_ended_one_not_at_all() -> None:
    from community.member_state import Challenge
    from community.members import FREED, _after_captcha

    muted = dict.fromkeys(FREED, False)

    def challenge(until: int) -> Challenge:
        restore = {"permissions": muted, "until": until}
        return Challenge("t", GROUP, ANN, "s", {}, "", [], 0, 0, restore=restore)

    later = int(time.time()) + 3600
    assert _after_captcha(challenge(later)) == (muted, later)
    assert _after_captcha(challenge(0)) == (muted, None)  # for good
    assert _after_captcha(challenge(int(time.time()) + 10)) == (FREED, None)  # ending: over
    assert _after_captcha(Challenge("t", GROUP, ANN, "s", {}, "", [], 0, 0)) == (FREED, None)


# --- 6. two join requests with a question at once: the second takes the first's answer ----------
CHAT_A, CHAT_B, REQUESTER = -100601, -100602, 2002


def test_questions_of_two_chats_asked_at_once_each_take_their_own_answer(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    """The question's workflow is keyed on the requester's private chat only, so the request to
    a second chat replaced the first one's workflow: the answer to the first question was taken
    as the (wrong) answer to the second, the second answer found no workflow, and the first
    request was declined at its deadline although it was answered right. Now the second
    question waits until the chat is free."""
    for chat_id, question, answer in ((CHAT_A, "Two plus two?", "four"), (CHAT_B, "Cat?", "meow")):
        question_policy(chat_id, question=question, answers=answer)
        update = make_join_request_update(user_id=REQUESTER, chat_id=chat_id)
        assert post_update(update)["X-Update-Outcome"] == "processed"
    [first] = asked_of(bot)
    assert "Two plus two?" in first
    post_update(make_message_update("four", chat_id=REQUESTER, user_id=REQUESTER))
    make_jobs_due()
    run_due(new_owner())  # the waiting question's job: the chat is free now
    assert len(asked_of(bot)) == 2 and "Cat?" in asked_of(bot)[1]
    post_update(make_message_update("meow", chat_id=REQUESTER, user_id=REQUESTER))
    approved = sorted(c.params["chat_id"] for c in succeeded(bot, "approveChatJoinRequest"))
    assert approved == sorted([CHAT_A, CHAT_B]), f"approved only {approved}"


def test_a_question_waits_for_a_support_conversation_and_does_not_wipe_it(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    from telegram_bot.state import get_store
    from telegram_bot.state.workflows import WorkflowStore

    workflows = WorkflowStore(get_store())
    workflows.start(
        chat_id=REQUESTER, user_id=REQUESTER, name="support.open", step="text", ttl_ms=60_000
    )
    question_policy(CHAT_A)
    update = make_join_request_update(user_id=REQUESTER, chat_id=CHAT_A)
    assert post_update(update)["X-Update-Outcome"] == "processed"
    assert asked_of(bot) == []
    kept = workflows.get(chat_id=REQUESTER, user_id=REQUESTER)
    assert kept is not None and kept.name == "support.open"
    workflows.cancel(chat_id=REQUESTER, user_id=REQUESTER)  # the conversation ends
    make_jobs_due()
    run_due(new_owner())
    assert len(asked_of(bot)) == 1


def asked_of(bot: FakeTelegramServer) -> list[str]:
    """The questions sent to the requester (not the answers to their answers)."""
    return [
        c.params["text"]
        for c in succeeded(bot, "sendMessage")
        if c.params["chat_id"] == REQUESTER and "Please answer" in c.params["text"]
    ]


# --- 5. a group upgraded to a supergroup loses its policies ---------------------------------------
OLD_GROUP, NEW_GROUP = -4001, -1004001


def test_a_group_upgraded_to_a_supergroup_keeps_its_member_policy(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    """Telegram moves a group to a new id when it becomes a supergroup (the message with
    ``migrate_to_chat_id`` in the old one, ``migrate_from_chat_id`` in the new one). Nothing
    handles it: the policy (welcome, captcha, anti-raid) stays on the dead id and the new
    supergroup has none."""
    make_policy(chat_id=OLD_GROUP, welcome_enabled=True, welcome_text="Hi {first_name}")
    now = int(time.time())
    moved = {
        "message_id": 50,
        "date": now,
        "chat": chat(OLD_GROUP, "group", "Cat lovers"),
        "from": {"id": 42, "is_bot": False, "first_name": "Owner"},
        "migrate_to_chat_id": NEW_GROUP,
    }
    arrived = {
        "message_id": 1,
        "date": now,
        "chat": chat(NEW_GROUP, "supergroup", "Cat lovers"),
        "sender_chat": chat(OLD_GROUP, "group", "Cat lovers"),
        "migrate_from_chat_id": OLD_GROUP,
    }
    post_update({"update_id": next_update_id(), "message": moved})
    post_update({"update_id": next_update_id(), "message": arrived})
    processed(post_update, join_update(ANN, chat_id=NEW_GROUP, date=now + 1))
    assert sent_to(bot, NEW_GROUP) == ["Hi Ann"], "the supergroup has no policy after the upgrade"


def test_an_upgrade_moves_every_apps_chat_settings_once_and_keeps_the_supergroups_own(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    from community.models import MemberPolicy
    from moderation.models import ChatSettings
    from telegram_bot.models import AuditEntry, ChatPreference

    make_policy(chat_id=OLD_GROUP, welcome_enabled=True, welcome_text="Hi")
    ChatSettings.objects.create(chat_id=OLD_GROUP, warn_limit=7)
    ChatPreference.objects.create(chat_id=OLD_GROUP, time_zone="Europe/Oslo")
    ChatPreference.objects.create(chat_id=NEW_GROUP, time_zone="Asia/Tokyo")  # its own
    arrived = {
        "message_id": 1,
        "date": int(time.time()),
        "chat": chat(NEW_GROUP, "supergroup", "Cat lovers"),
        "migrate_from_chat_id": OLD_GROUP,
    }
    update = {"update_id": next_update_id(), "message": arrived}
    assert post_update(update)["X-Update-Outcome"] == "processed"
    assert MemberPolicy.objects.get(chat_id=NEW_GROUP).welcome_text == "Hi"
    assert ChatSettings.objects.get(chat_id=NEW_GROUP).warn_limit == 7
    assert ChatPreference.objects.get(chat_id=NEW_GROUP).time_zone == "Asia/Tokyo"
    assert not MemberPolicy.objects.filter(chat_id=OLD_GROUP).exists()
    [entry] = AuditEntry.objects.filter(action="chat.migrate")
    assert entry.chat_id == NEW_GROUP and str(OLD_GROUP) in entry.detail
    update["update_id"] = next_update_id()  # the old group's message: nothing left to move
    update["message"] = {**arrived, "chat": chat(OLD_GROUP, "group", "Cat lovers")}
    del update["message"]["migrate_from_chat_id"]
    update["message"]["migrate_to_chat_id"] = NEW_GROUP
    assert post_update(update)["X-Update-Outcome"] == "processed"
    assert AuditEntry.objects.filter(action="chat.migrate").count() == 1


def test_captcha_of_an_earlier_stay_is_not_given_back_as_the_arrival_restriction(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    """The leave's lift of captcha 1 is rate limited (handed to the job) and the member
    joins again before it runs. Telegram reports the rejoin as ``restricted`` (captcha 1's own
    restriction, never lifted); that is stored as the restriction they "arrived with", and
    passing captcha 2 gave it back: muted for good, with no moderator having muted them."""
    bot_may_restrict(bot)
    make_policy(captcha_enabled=True)
    now = int(time.time())
    processed(post_update, join_update(ANN, date=now - 60))
    assert muted_in_fake(bot)  # captcha 1's restriction
    bot.set_chat_member(GROUP, ANN, "restricted", first_name="Ann", is_member=False)
    bot.fail_next("restrictChatMember", status=429, retry_after=5)  # the lift waits for its job
    leave = chat_member_update(ANN, "restricted", "restricted", date=now - 30)
    leave["chat_member"]["new_chat_member"] = restricted(ANN, is_member=False)
    processed(post_update, leave)
    # Back within the retry (a public group: no join request): still captcha 1's restriction.
    rejoin = chat_member_update(ANN, "restricted", "restricted", date=now)
    rejoin["chat_member"]["old_chat_member"] = restricted(ANN, is_member=False)
    rejoin["chat_member"]["new_chat_member"] = restricted(ANN, is_member=True)
    bot.set_chat_member(GROUP, ANN, "restricted", first_name="Ann", is_member=True)
    processed(post_update, rejoin)
    right = last_right_button(bot)
    processed(post_update, press_update(right, user_id=ANN))
    restricts = [
        (c.status, c.params["permissions"].get("can_send_messages"))
        for c in bot.calls_to("restrictChatMember")
    ]
    assert not muted_in_fake(bot), (
        f"passed the captcha, still muted by the earlier captcha: restrictChatMember {restricts}"
    )


def last_right_button(bot: FakeTelegramServer) -> str:
    """The right button of the newest challenge message."""
    call = [c for c in succeeded(bot, "sendMessage") if "mc:" in str(c.params.get("reply_markup"))][
        -1
    ]
    [row] = call.params["reply_markup"]["inline_keyboard"]
    return next(b["callback_data"] for b in row if f" {b['text']} within" in call.params["text"])


def test_a_ban_during_the_captcha_is_not_undone_by_lifting_the_captchas_restriction(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    """A member who leaves during the captcha has the captcha's restriction lifted. A ban is a
    leave too (``kicked``): the bot called restrictChatMember with every permission on the
    banned user, and in Telegram a ban is itself a restriction (MTProto's editBanned), which
    that replaces (the fake does not model it, hence the check on the calls)."""
    bot_may_restrict(bot)
    make_policy(captcha_enabled=True)
    now = int(time.time())
    processed(post_update, join_update(ANN, date=now - 60))
    assert muted_in_fake(bot)
    calls_before = len(bot.calls_to("restrictChatMember"))
    bot.set_chat_member(GROUP, ANN, "kicked", first_name="Ann")
    ban = chat_member_update(ANN, "restricted", "kicked", date=now - 30, by=42)
    ban["chat_member"]["new_chat_member"]["until_date"] = 0
    processed(post_update, ban)
    lifts = [
        c.params
        for c in bot.calls_to("restrictChatMember")[calls_before:]
        if c.params["user_id"] == ANN
    ]
    assert lifts == [], f"restrictChatMember on the banned member (lifts the ban): {lifts}"


def test_a_question_that_waited_past_telegrams_window_goes_to_the_admins(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    from community import services
    from telegram_bot.state import get_store
    from telegram_bot.state.workflows import WorkflowStore

    WorkflowStore(get_store()).start(
        chat_id=REQUESTER, user_id=REQUESTER, name="support.open", step="text", ttl_ms=3_600_000
    )
    question_policy(CHAT_A)
    update = make_join_request_update(user_id=REQUESTER, chat_id=CHAT_A)
    update["chat_join_request"]["date"] = int(time.time()) - services.ASK_WINDOW_SECONDS - 5
    assert post_update(update)["X-Update-Outcome"] == "processed"
    make_jobs_due()
    run_due(new_owner())
    assert asked_of(bot) == []
    notes = [c.params["text"] for c in succeeded(bot, "sendMessage") if "jr:a:" in str(c.params)]
    assert len(notes) == 1 and "could not be asked in time" in notes[0]


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(60)
def test_two_join_requests_at_the_same_moment_ask_one_question_and_defer_the_other(
    bot: FakeTelegramServer,
) -> None:
    """Real threads, both requests past the busy check at once: the workflow's
    compare-and-set lets one start; the other's question waits (before, the second start
    replaced the first one's workflow)."""
    from django.db import connections

    from telegram_bot.pipeline.process import Outcome, process_update
    from telegram_bot.state import get_store
    from telegram_bot.state.workflows import WorkflowStore

    for chat_id in (CHAT_A, CHAT_B):
        question_policy(chat_id, question=f"Question of {chat_id}?")
    updates = [make_join_request_update(user_id=REQUESTER, chat_id=c) for c in (CHAT_A, CHAT_B)]
    barrier = threading.Barrier(2)
    outcomes: list[Any] = []

    def work(update: dict[str, Any]) -> None:
        try:
            barrier.wait()
            outcomes.append(process_update(update))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=work, args=(update,)) for update in updates]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert outcomes == [Outcome.PROCESSED, Outcome.PROCESSED]
    [asked] = asked_of(bot)
    workflow = WorkflowStore(get_store()).get(chat_id=REQUESTER, user_id=REQUESTER)
    assert workflow is not None and str(workflow.data["token"])
    waiting = Job.objects.filter(kind="community.question_ask", status=JobStatus.QUEUED)
    assert waiting.count() == 1
    # The workflow belongs to the request whose question went out.
    record = join_request_get(str(workflow.data["token"]))
    assert record is not None and f"Question of {record.chat_id}?" in asked


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(60)
def test_a_redelivery_while_the_waiting_questions_job_asks_sends_one_question(
    bot: FakeTelegramServer,
) -> None:
    """The question waited for a busy chat (its job queued); the chat is free now, and the
    job and a re-delivery of the request (its first delivery stopped before answering) ask at
    the same moment, real threads, one of them slowed inside sendMessage: one asks, the other
    leaves it to the job (before, both found the workflow their own and both sent)."""
    from django.db import connections

    from telegram_bot.pipeline.process import process_update
    from telegram_bot.state import get_store
    from telegram_bot.state.workflows import WorkflowStore

    workflows = WorkflowStore(get_store())
    workflows.start(
        chat_id=REQUESTER, user_id=REQUESTER, name="support.open", step="text", ttl_ms=60_000
    )
    question_policy(CHAT_A)
    update = make_join_request_update(user_id=REQUESTER, chat_id=CHAT_A)
    process_update(update)
    assert asked_of(bot) == []
    workflows.cancel(chat_id=REQUESTER, user_id=REQUESTER)  # the chat is free
    get_store().delete(f"upd:{update['update_id']}")  # as if the first delivery had stopped
    make_jobs_due()
    bot.delay_next("sendMessage", 1.0)
    barrier = threading.Barrier(2)

    def redeliver() -> None:
        try:
            barrier.wait()
            process_update(update)
        finally:
            connections.close_all()

    def job() -> None:
        try:
            barrier.wait()
            run_due(new_owner())
        finally:
            connections.close_all()

    threads = [threading.Thread(target=redeliver), threading.Thread(target=job)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    make_jobs_due()
    run_due(new_owner())  # a question left to the job finds it asked
    assert len(asked_of(bot)) == 1, asked_of(bot)
