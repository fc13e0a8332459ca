"""The moderation commands end to end against the fake Bot API: who may, what happens in
Telegram, what is answered and recorded."""

from __future__ import annotations

import time

import pytest

from moderation.models import Warning
from telegram_bot.models import AuditEntry, BotAdmin
from telegram_bot.pipeline.process import Outcome
from tests.builders import make_message
from tests.conftest import OWNER_ID
from tests.fakes.telegram import FakeTelegramServer
from tests.moderation.helpers import (
    BOT_ID,
    CHAT_OWNER,
    DELETER,
    GROUP,
    MEMBER,
    MOD,
    answers,
    command,
    describe_group,
    member_message,
    member_update,
    ok_calls,
    run,
)

pytestmark = pytest.mark.django_db


def test_mute_by_reply_with_duration_and_reason(bot: FakeTelegramServer) -> None:
    describe_group(bot)
    before = int(time.time())
    assert run(command("/mute 2h spamming", reply_to=member_message())) == Outcome.PROCESSED
    [restrict] = ok_calls(bot, "restrictChatMember")
    assert restrict.params["user_id"] == MEMBER
    assert restrict.params["permissions"] == {"can_send_messages": False}
    assert before + 7200 <= restrict.params["until_date"] <= int(time.time()) + 7200
    assert bot.chat_member(GROUP, MEMBER)["status"] == "restricted"
    assert answers(bot) == ["Mallory is muted for 2h: spamming"]
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.actor_id, entry.chat_id, entry.target_id, entry.reason) == (
        "mute",
        MOD,
        GROUP,
        MEMBER,
        "spamming",
    )
    assert entry.outcome == "done" and entry.source == "command"


def test_unmute_ban_unban_kick(bot: FakeTelegramServer) -> None:
    describe_group(bot)
    target = member_message()
    run(command("/mute", reply_to=target))
    run(command("/unmute", reply_to=target))
    assert bot.chat_member(GROUP, MEMBER)["status"] == "member"
    run(command("/ban 7d", reply_to=target))
    assert bot.chat_member(GROUP, MEMBER)["status"] == "kicked"
    run(command(f"/unban {MEMBER}"))
    assert bot.chat_member(GROUP, MEMBER)["status"] == "left"
    run(command("/kick", reply_to=member_message(5010, "Eve")))
    assert bot.chat_member(GROUP, 5010)["status"] == "left"
    assert answers(bot) == [
        "Mallory is muted for good.",
        "Mallory is unmuted.",
        "Mallory is banned for 7d.",
        f"{MEMBER} is unbanned.",
        "Eve is kicked.",
    ]
    assert list(AuditEntry.objects.order_by("id").values_list("action", flat=True)) == [
        "mute",
        "unmute",
        "ban",
        "unban",
        "kick",
    ]


def test_members_and_admins_without_the_right_are_refused(bot: FakeTelegramServer) -> None:
    describe_group(bot)
    run(command("/ban", sender=MEMBER + 1, reply_to=member_message()))
    run(command("/ban", sender=DELETER, reply_to=member_message()))
    assert ok_calls(bot, "banChatMember") == []
    assert answers(bot) == [
        "Only the chat's admins can do that.",
        "You need the right to restrict members for that.",
    ]
    assert AuditEntry.objects.count() == 0


def test_the_owner_and_global_admins_may_moderate(bot: FakeTelegramServer) -> None:
    describe_group(bot)
    BotAdmin.objects.create(telegram_id=4242)
    run(command("/ban", sender=CHAT_OWNER, reply_to=member_message()))
    run(command("/ban", sender=4242, reply_to=member_message(5010, "Eve")))
    run(command("/ban", sender=OWNER_ID, reply_to=member_message(5011, "Ivy")))
    assert len(ok_calls(bot, "banChatMember")) == 3


def test_admins_the_owner_and_the_bot_are_protected(bot: FakeTelegramServer) -> None:
    describe_group(bot)
    run(command("/mute", reply_to=member_message(DELETER, "Del")))
    run(command("/ban", reply_to=member_message(CHAT_OWNER, "Olga")))
    run(command(f"/ban {BOT_ID}"))
    run(command("/ban @deleter"))
    assert bot.calls_to("banChatMember") == [] and bot.calls_to("restrictChatMember") == []
    assert answers(bot) == [
        "That is an admin. (Del)",
        "That is the chat's owner. (Olga)",
        f"I won't act on myself. ({BOT_ID})",
        "That is an admin. (@deleter)",
    ]


def test_the_bot_says_which_right_it_lacks(bot: FakeTelegramServer) -> None:
    describe_group(bot, can_delete_messages=True)
    run(command("/mute 1h", reply_to=member_message()))
    # Demoted: the my_chat_member update drops the cached admin list.
    bot.set_chat_member(GROUP, BOT_ID, "member", is_bot=True)
    assert run(member_update(BOT_ID, "administrator", "member", kind="my_chat_member")) == (
        Outcome.PROCESSED
    )
    run(command("/del", sender=CHAT_OWNER, reply_to=member_message()))
    assert bot.calls_to("restrictChatMember") == [] and bot.calls_to("deleteMessages") == []
    assert answers(bot) == [
        "I lack the right to restrict members: an owner can grant it.",
        "I am not an admin here: make me one with the right to delete messages.",
    ]


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("/mute -5h", "'-5h' is not a duration. Durations look like 30m, 2h or 7d"),
        ("/ban 99999d", "99999d is out of range. Durations look like 30m, 2h or 7d"),
        ("/mute 10s", "10s is out of range."),
        ("/ban @nobody", "I don't know @nobody here: reply to one of their messages or use"),
        ("/ban", "Reply to the member's message, or give their @username or user id."),
        ("/ban hello", "hello is not a member"),
        ("/ban \u00b2", "\u00b2 is not a member"),  # a digit to str.isdigit(), not to int()
        ("/unban \u00b9\u00b2", "\u00b9\u00b2 is not a member"),
    ],
)
def test_bad_arguments_get_one_line_and_change_nothing(
    bot: FakeTelegramServer, text: str, answer: str
) -> None:
    describe_group(bot)
    reply = member_message() if text.split()[-1][0] in "0123456789" or "-" in text else None
    run(command(text, reply_to=reply))
    [said] = answers(bot)
    assert said.startswith(answer) and "\n" not in said
    assert bot.calls_to("restrictChatMember") == [] and bot.calls_to("banChatMember") == []
    assert AuditEntry.objects.count() == 0


def test_a_reply_to_a_service_message_is_refused(bot: FakeTelegramServer) -> None:
    describe_group(bot)
    joined = make_message(None, chat_id=GROUP, user_id=MEMBER)
    joined["new_chat_members"] = [joined["from"]]
    run(command("/ban", reply_to=joined))
    assert answers(bot) == ["That is a service message: reply to something a member wrote."]
    assert bot.calls_to("banChatMember") == []


def test_telegram_refusals_get_clear_answers(bot: FakeTelegramServer) -> None:
    describe_group(bot)
    bot.fail_next("banChatMember", status=400, description="Bad Request: user not found")
    run(command("/ban 424242"))
    assert answers(bot) == ["I can't find that user in this chat."]
    assert AuditEntry.objects.get().outcome == "failed"


def test_a_known_username_is_resolved(bot: FakeTelegramServer) -> None:
    describe_group(bot)
    run(command("/warn", reply_to=member_message()))
    run(command("/mute @mallory 30m"))
    assert ok_calls(bot, "restrictChatMember")[0].params["user_id"] == MEMBER


def test_del_and_purge(bot: FakeTelegramServer) -> None:
    describe_group(bot)
    target = member_message()
    update = command("/del", sender=DELETER, reply_to=target)
    run(update)
    [call] = ok_calls(bot, "deleteMessages")
    assert call.params["message_ids"] == [target["message_id"], update["message"]["message_id"]]
    first = member_message()
    first["message_id"] = 1000
    purge = command("/purge", sender=DELETER, reply_to=first)
    purge["message"]["message_id"] = 1250
    run(purge)
    batches = [c.params["message_ids"] for c in ok_calls(bot, "deleteMessages")[1:]]
    assert [len(b) for b in batches] == [100, 100, 51]
    assert batches[0][0] == 1000 and batches[-1][-1] == 1250
    too_many = command("/purge", sender=DELETER, reply_to=first)
    too_many["message"]["message_id"] = 1000 + 600
    run(too_many)
    assert answers(bot) == ["At most 500 messages at once: reply to a later message."]
    assert list(AuditEntry.objects.order_by("id").values_list("action", "detail")) == [
        ("del", f"1 message(s) from #{target['message_id']}"),
        ("purge", "250 message(s) from #1000"),
    ]


def test_deleting_a_message_older_than_48_hours(bot: FakeTelegramServer) -> None:
    describe_group(bot)
    old = member_message()
    bot.note_message(GROUP, old["message_id"], date=int(time.time()) - 49 * 3600, user_id=MEMBER)
    run(command("/del", sender=DELETER, reply_to=old))
    assert answers(bot) == [
        "That message can't be deleted: it is older than 48 hours, or I lack the right."
    ]


def test_a_group_admin_without_restrict_rights_may_delete(bot: FakeTelegramServer) -> None:
    describe_group(bot)
    run(command("/del", sender=MOD, reply_to=member_message()))
    assert answers(bot) == ["You need the right to delete messages for that."]


def test_commands_for_another_bot_are_ignored(bot: FakeTelegramServer) -> None:
    describe_group(bot)
    update = command("/ban@OtherBot", reply_to=member_message())
    update["message"]["entities"][0]["length"] = len("/ban@OtherBot")
    assert run(update) in (Outcome.IGNORED, Outcome.PROCESSED)
    assert bot.calls_to("banChatMember") == [] and answers(bot) == []


def test_warnings_reach_the_limit_and_mute_once(bot: FakeTelegramServer) -> None:
    describe_group(bot)
    target = member_message()
    for reason in ("one", "two", "three"):
        run(command(f"/warn {reason}", reply_to=target))
    assert ok_calls(bot, "restrictChatMember")[0].params["user_id"] == MEMBER
    assert answers(bot)[-1] == "Mallory is warned (3/3): three Mallory is muted for 1d: 3 warnings"
    run(command("/warns", reply_to=target))
    assert answers(bot)[-1] == "Mallory has no warnings."
    run(command("/warn four", reply_to=target))
    run(command("/warns", reply_to=target))
    assert answers(bot)[-1] == "Mallory has 1/3 warnings: four"
    run(command("/unwarn", reply_to=target))
    assert answers(bot)[-1] == "Removed a warning of Mallory (0 left)."
    assert len(ok_calls(bot, "restrictChatMember")) == 1
    auto = AuditEntry.objects.get(action="mute")
    assert auto.source == "auto" and auto.actor_name == "bot" and auto.reason == "3 warnings"


def test_warnings_expire(bot: FakeTelegramServer) -> None:
    describe_group(bot)
    target = member_message()
    run(command("/warn", reply_to=target))
    run(command("/warn", reply_to=target))
    Warning.objects.update(expires_at=Warning.objects.first().created_at)  # type: ignore[union-attr]
    run(command("/warn", reply_to=target))
    assert answers(bot)[-1] == "Mallory is warned (1/3)."
    assert bot.calls_to("restrictChatMember") == []


def test_nul_characters_in_names_and_reasons_are_dropped(bot: FakeTelegramServer) -> None:
    describe_group(bot)
    run(command("/warn bad\x00word", reply_to=member_message(name="Mal\x00lory")))
    entry = AuditEntry.objects.get()
    assert (entry.target_name, entry.reason) == ("Mallory", "badword")
    assert Warning.objects.get().reason == "badword"


@pytest.mark.parametrize("second", ["/kick", "/mute 1h", "/mute"])
def test_a_mute_or_kick_of_a_banned_member_keeps_the_ban(
    bot: FakeTelegramServer, second: str
) -> None:
    """Two moderators answer one spam message: /ban, then /kick or /mute a second later. The
    kick banned for a minute then unbanned, the mute restricted: either lifted the ban and the
    spammer could come back. Now the member stays banned and the second moderator is told."""
    describe_group(bot)
    spam = member_message()
    run(command("/ban spam", reply_to=spam))
    assert run(command(second, sender=CHAT_OWNER, reply_to=spam)) == Outcome.PROCESSED
    member = bot.chat_member(GROUP, MEMBER)
    assert member["status"] == "kicked" and not member.get("until_date")
    assert answers(bot)[-1] == "Mallory is already banned."
    assert ok_calls(bot, "unbanChatMember") == [] and ok_calls(bot, "restrictChatMember") == []


def test_a_moderator_may_still_mute_kick_and_rebanned_members(bot: FakeTelegramServer) -> None:
    """Not banned: the mute and the kick go through; a ban may replace a ban."""
    describe_group(bot)
    run(command("/mute 1h", reply_to=member_message()))
    run(command("/mute 2h", reply_to=member_message()))  # the length changed in place
    run(command("/kick", reply_to=member_message(5010, "Eve")))
    run(command("/ban", reply_to=member_message(5011, "Oscar")))
    run(command("/ban 1d", reply_to=member_message(5011, "Oscar")))
    assert answers(bot) == [
        "Mallory is muted for 1h.",
        "Mallory is muted for 2h.",
        "Eve is kicked.",
        "Oscar is banned for good.",
        "Oscar is banned for 1d.",
    ]
    assert bot.chat_member(GROUP, 5011)["until_date"] > 0


def test_a_warning_limit_reached_by_a_banned_member_keeps_the_ban(bot: FakeTelegramServer) -> None:
    """/warn a spammer already banned up to the limit: its mute would have lifted the ban."""
    describe_group(bot)
    spam = member_message()
    run(command("/ban", reply_to=spam))
    for reason in ("one", "two", "three"):
        run(command(f"/warn {reason}", reply_to=spam))
    assert bot.chat_member(GROUP, MEMBER)["status"] == "kicked"
    assert ok_calls(bot, "restrictChatMember") == []
    assert answers(bot)[-1].endswith("Mallory is already banned.")


def test_a_kick_whose_unban_is_retried_by_its_job_is_done_not_refused(
    bot: FakeTelegramServer,
) -> None:
    """The kick's ban went through, its unban met a 429: the job found the kick's own
    one-minute ban and recorded "already banned", never unbanning. A ban that short is no ban
    to keep: the job kicks, and the member may come back."""
    from telegram_bot.jobs.runner import new_owner, run_due
    from tests.community.helpers import make_jobs_due

    describe_group(bot)
    bot.fail_next("unbanChatMember", status=429, retry_after=1, description="Too Many Requests")
    run(command("/kick", reply_to=member_message()))
    make_jobs_due()
    assert run_due(new_owner()) == 1
    assert bot.chat_member(GROUP, MEMBER)["status"] == "left"
    assert list(AuditEntry.objects.values_list("action", "outcome")) == [("kick", "done")]
