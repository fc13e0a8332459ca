"""Moderation commands and the moderation panel: a mention in
the reason, mistyped durations, stale buttons, forum topics, long arguments, races. Each test
failed on the code before its fix."""

from __future__ import annotations

import pytest

from moderation.durations import DurationError, looks_like_duration, parse_duration
from moderation.models import Warning
from telegram_bot.models import AuditEntry
from tests.builders import user
from tests.fakes.telegram import FakeTelegramServer
from tests.moderation.helpers import (
    GROUP,
    MEMBER,
    OTHER,
    answers,
    command,
    describe_group,
    ok_calls,
    run,
)

pytestmark = pytest.mark.django_db


# -- 1. a text mention in the reason becomes the target -------------------------------------


def mentioning_bob(text: str) -> dict:
    """The command ``text`` whose "Bob" is a text mention of OTHER (picked from the menu)."""
    update = command(text)
    mention = {"type": "text_mention", "offset": text.index("Bob"), "length": 3}
    update["message"]["entities"].append({**mention, "user": user(OTHER, "Bob")})
    return update


def test_a_text_mention_in_the_reason_does_not_replace_the_id_given(
    bot: FakeTelegramServer,
) -> None:
    """``/ban 5005 for harassing Bob`` where "Bob" is a text mention (a user without a
    username, picked from the mention menu): the member to ban is 5005, not Bob, the victim
    named in the reason. ``_target_from_arg`` takes the first text_mention entity anywhere in
    the message, whatever its offset."""
    describe_group(bot)
    update = mentioning_bob(f"/ban {MEMBER} for harassing Bob")
    run(update)
    banned = [call.params["user_id"] for call in ok_calls(bot, "banChatMember")]
    assert banned == [MEMBER], f"banned {banned}, answered {answers(bot)}"


def test_a_text_mention_in_a_warn_reason_does_not_take_the_warning(
    bot: FakeTelegramServer,
) -> None:
    describe_group(bot)
    update = mentioning_bob(f"/warn {MEMBER} stop insulting Bob")
    run(update)
    warned = list(Warning.objects.values_list("user_id", flat=True))
    assert warned == [MEMBER], f"warned {warned}, answered {answers(bot)}"


def test_a_text_mention_as_the_first_argument_is_the_target_and_its_words_not_the_reason(
    bot: FakeTelegramServer,
) -> None:
    describe_group(bot)
    text = "/ban \U0001f600Bob Smith spamming"  # the emoji is 2 UTF-16 units, as offsets count
    update = command(text)
    update["message"]["entities"].append(
        {"type": "text_mention", "offset": 5, "length": 11, "user": user(OTHER, "Bob")}
    )
    run(update)
    assert [call.params["user_id"] for call in ok_calls(bot, "banChatMember")] == [OTHER]
    assert AuditEntry.objects.get(action="ban").reason == "spamming"


# -- 2. a duration the parser does not recognise becomes "for good" -------------------------


@pytest.mark.parametrize(
    "duration",
    [
        "1h30m",  # a compound duration, common in other bots
        "30\u043c",  # 30 with a Cyrillic "m" (the bot ships a Russian translation)
        "1.5h",
    ],
)
def test_a_mistyped_duration_is_never_forever(bot: FakeTelegramServer, duration: str) -> None:
    """``durations.py``: "a typo must never silently become [forever]". ``looks_like_duration``
    recognised only ``[-+]?digits[a-z]*``, so ``1h30m``, ``30м`` or ``1.5h`` were read as the
    reason and the member was muted with no until_date: for good."""
    describe_group(bot)
    run(command(f"/mute {MEMBER} {duration} spamming"))
    restricted = ok_calls(bot, "restrictChatMember")
    forever = [c for c in restricted if not c.params.get("until_date")]
    assert forever == [], f"muted for good: {answers(bot)}"
    if duration == "1.5h":
        assert answers(bot)[-1].startswith(f"'{duration}' is not a duration")
    else:  # a sum, a Russian unit letter: durations now
        assert answers(bot)[-1].endswith(("muted for 90m: spamming", "muted for 30m: spamming"))


@pytest.mark.parametrize(
    ("typed", "seconds"),
    [
        ("30m", 1800),
        ("1h30m", 5400),
        ("1d12h", 129600),
        ("30м", 1800),
        ("2Ч", 7200),
        ("1н", 604800),
        ("2w", 1209600),
    ],
)
def test_durations_take_sums_and_russian_unit_letters(typed: str, seconds: int) -> None:
    assert parse_duration(typed) == seconds


@pytest.mark.parametrize("typed", ["1.5h", "10 min", "5x", "-5h", "٣m", "1h30", "367d", "1h" * 6])
def test_a_token_that_starts_like_a_number_and_is_no_duration_is_refused(typed: str) -> None:
    assert looks_like_duration(typed.split()[0])
    with pytest.raises(DurationError):
        parse_duration(typed.split()[0])


# -- 9. refusals quote the argument whole: past Telegram's 4096 characters -----------------


@pytest.mark.parametrize(
    "text",
    [
        "/ban @" + "a" * 4085,  # "I don't know @aaa... here: reply to one of their messages..."
        f"/mute {MEMBER} " + "9" * 4070 + "m",  # "'999...m' is not a duration. Durations..."
    ],
)
def test_a_refusal_quoting_a_long_argument_fits_one_message(
    bot: FakeTelegramServer, text: str
) -> None:
    """``_target_from_arg`` clips the argument it quotes in one refusal (``arg[:40]``) but not
    in "I don't know %(arg)s here", and ``parse_duration`` quotes the whole token: a command
    of up to 4096 characters gets an answer longer than Telegram's 4096, which Telegram
    refuses ("message is too long"); ``ctx.reply`` is outside the handler's try, so the update
    becomes a dead letter and the moderator gets no answer. (The fake Bot API does not check
    the length, so the test does.)"""
    from telegram_bot.client.limits import TEXT_LIMIT

    describe_group(bot)
    assert len(text) <= 4096
    run(command(text))
    lengths = [len(c.params["text"]) for c in bot.calls_to("sendMessage")]
    assert lengths and max(lengths) <= TEXT_LIMIT, f"answers of {lengths} characters"


# -- 8. in a forum topic, /del and /purge take the topic's root for the replied message ------


def _in_topic(text: str, *, sender: int, root_id: int, message_id: int) -> dict:
    """A message in a forum topic that replies to nothing: Telegram sets reply_to_message to
    the topic's creation message (a service message) on every such message."""
    from tests.builders import make_message

    root = make_message(None, chat_id=GROUP, user_id=MEMBER)
    root["message_id"] = root_id
    root["message_thread_id"] = root_id
    root["forum_topic_created"] = {"name": "Off-topic", "icon_color": 7322096}
    update = command(text, sender=sender, reply_to=root)
    update["message"].update(
        message_id=message_id, message_thread_id=root_id, is_topic_message=True
    )
    return update


@pytest.mark.parametrize("text", ["/purge", "/del"])
def test_del_and_purge_without_a_reply_in_a_forum_topic_delete_nothing(
    bot: FakeTelegramServer, text: str
) -> None:
    """``handlers.delete`` / ``purge`` use ``reply_to_message`` as is; ``resolve_target``
    skips a topic root (``_is_topic_root``) but these two do not. So ``/purge`` typed in a
    forum topic without a reply deletes every message of the whole chat (all topics: message
    ids are chat-wide) from the topic's creation on, up to 500, and ``/del`` deletes the
    topic's creation message, instead of "Reply to the message"."""
    from tests.moderation.helpers import DELETER

    describe_group(bot)
    bot.set_chat(GROUP, "supergroup", title="Test group", is_forum=True)
    bot.results.add_topic(GROUP, 2000)
    run(_in_topic(text, sender=DELETER, root_id=2000, message_id=2300))
    deleted = [i for c in ok_calls(bot, "deleteMessages") for i in c.params["message_ids"]]
    assert deleted == [], f"deleted {len(deleted)} message(s) from #{min(deleted)}; {answers(bot)}"
    assert answers(bot) and answers(bot)[0].startswith("Reply to")


# -- 5. the panel's buttons toggle whatever the setting is now, not what they showed --------


def _button(markup: dict, prefix: str) -> dict:
    return next(
        button
        for row in markup["inline_keyboard"]
        for button in row
        if prefix in button["callback_data"]
    )


def test_a_stale_anti_flood_turn_on_button_does_not_turn_it_off(
    bot: FakeTelegramServer,
) -> None:
    """Two admins have the chat's moderation page open; it shows "Anti-flood: turn on". The
    first presses it (on). The second presses the same button on their (stale) copy and
    anti-flood goes OFF: ``mod:s:<chat>:flood`` means "toggle", so the button does the
    opposite of what it said (the old services.settings_toggle). The same for a double tap.
    The button now carries the state it sets (``flood=on``)."""
    from moderation.models import ChatSettings
    from telegram_bot.models import BotAdmin
    from tests.builders import make_callback_update
    from tests.conftest import OWNER_ID

    ChatSettings.objects.create(chat_id=GROUP, flood_action="none")
    BotAdmin.objects.create(telegram_id=4242)
    run(make_callback_update(f"mod:c:{GROUP}", user_id=OWNER_ID))
    run(make_callback_update(f"mod:c:{GROUP}", user_id=4242))
    shown = [c.params for c in ok_calls(bot, "editMessageText")]
    assert len(shown) == 2
    for view in shown:
        assert _button(view["reply_markup"], ":flood")["text"] == "Anti-flood: turn on"
    data = _button(shown[1]["reply_markup"], ":flood")["callback_data"]
    run(
        make_callback_update(
            _button(shown[0]["reply_markup"], ":flood")["callback_data"], user_id=OWNER_ID
        )
    )
    assert ChatSettings.objects.get(chat_id=GROUP).flood_action != "none"
    run(make_callback_update(data, user_id=4242))  # "turn on", pressed on the older copy
    assert ChatSettings.objects.get(chat_id=GROUP).flood_action != "none", (
        "the 'Anti-flood: turn on' button turned anti-flood off"
    )


# -- 10. two moderators /unwarn the same member at once: one warning goes, both are told so --


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(60)
def test_two_unwarns_at_once_remove_two_warnings(
    bot: FakeTelegramServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``services.unwarn`` reads the latest active warning without a lock (unlike ``warn``,
    which locks the member's ``WarnState``) and revokes it by primary key: two moderators'
    /unwarn at the same moment both pick the same warning, one warning is revoked, and both
    are answered "Removed a warning". Here both reads happen before either write (a barrier
    that gives up after a second, so that code which serialises the two still passes)."""
    import contextlib
    import threading
    from typing import Any

    from django.db import connections

    from moderation import services
    from telegram_bot.pipeline.process import Outcome, process_update
    from tests.moderation.helpers import CHAT_OWNER, MOD, member_message

    describe_group(bot)
    target = member_message()
    for reason in ("one", "two"):
        run(command(f"/warn {reason}", reply_to=target))
    assert Warning.objects.filter(revoked=False).count() == 2

    barrier = threading.Barrier(2, timeout=1.0)
    original = services._active

    class Reading:
        def __init__(self, queryset: Any) -> None:
            self.queryset = queryset

        def first(self) -> Any:
            found = self.queryset.first()
            with contextlib.suppress(threading.BrokenBarrierError):
                barrier.wait()
            return found

        def __iter__(self) -> Any:
            return iter(self.queryset)

        def __getattr__(self, name: str) -> Any:
            return getattr(self.queryset, name)

    monkeypatch.setattr(services, "_active", lambda *a: Reading(original(*a)))
    outcomes: list[Any] = []

    def work(update: dict[str, Any]) -> None:
        try:
            outcomes.append(process_update(update))
        finally:
            connections.close_all()

    threads = [
        threading.Thread(target=work, args=(command("/unwarn", sender=s, reply_to=target),))
        for s in (MOD, CHAT_OWNER)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert outcomes == [Outcome.PROCESSED, Outcome.PROCESSED]
    said = [a for a in answers(bot) if a.startswith("Removed")]
    left = Warning.objects.filter(revoked=False).count()
    assert left == 2 - len(said), f"{len(said)} told 'removed', {left} warning(s) still active"


# -- 4. a demotion seen while the admin list is being fetched is undone by the cache write --


def test_a_demotion_during_the_admin_fetch_is_not_cached_away(
    bot: FakeTelegramServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``rights.chat_admins``: read the cache, miss, call getChatAdministrators, then
    ``store.set`` the answer unconditionally for 10 minutes. When the ``chat_member`` update
    of a demotion is handled (``forget_chat_admins``: a delete) between Telegram's answer and
    that set (another worker, at the same moment), the list from before the demotion is
    written after the delete and trusted for 10 minutes: the demoted admin keeps moderating.
    A fix: a generation the observer bumps, compared when the fetched list is stored."""
    from telegram_bot.client import TelegramClient
    from tests.moderation.helpers import CHAT_OWNER, MOD, member_message, member_update

    describe_group(bot)
    original = TelegramClient.get_chat_administrators
    demoted: list[bool] = []

    def fetch_then_demotion(self: TelegramClient, **params: object) -> list[dict]:
        answer = original(self, **params)  # the list before the demotion
        if not demoted:
            demoted.append(True)
            bot.set_chat_member(GROUP, MOD, "member", first_name="Mo")
            run(member_update(MOD, "administrator", "member"))  # the observer drops the cache
        return answer

    monkeypatch.setattr(TelegramClient, "get_chat_administrators", fetch_then_demotion)
    run(command("/mute 1h", sender=CHAT_OWNER, reply_to=member_message()))
    monkeypatch.setattr(TelegramClient, "get_chat_administrators", original)
    assert demoted and len(ok_calls(bot, "restrictChatMember")) == 1
    # Mo is no longer an admin, as the chat_member update said.
    run(command(f"/ban {OTHER}", sender=MOD))
    assert ok_calls(bot, "banChatMember") == [], f"a demoted admin banned: {answers(bot)}"


# -- 7. @username lookups read a username recorded once, never refreshed ---------------------


def test_a_warned_members_new_username_is_learned(bot: FakeTelegramServer) -> None:
    """``services.warn`` creates the member's ``WarnState`` with their name and username as
    ``defaults`` of ``get_or_create`` and never updates them, and ``known_username`` resolves
    @username from those rows. A member warned as @mallory who renames to @mal_new and is
    warned again is still only known as @mallory: ``/mute @mal_new`` is refused, and once
    someone else takes @mallory (usernames are reassigned), ``/ban @mallory`` bans the old
    holder."""
    from tests.moderation.helpers import member_message

    describe_group(bot)
    run(command("/warn", reply_to=member_message(MEMBER, "Mallory")))  # @mallory
    renamed = member_message(MEMBER, "Mallory")
    renamed["from"]["username"] = "mal_new"
    run(command("/warn", reply_to=renamed))
    run(command("/mute @mal_new 1h"))
    muted = [c.params["user_id"] for c in ok_calls(bot, "restrictChatMember")]
    assert muted == [MEMBER], f"answers: {answers(bot)}"


def test_a_username_taken_over_by_another_member_leads_to_them_not_the_old_holder(
    bot: FakeTelegramServer,
) -> None:
    from tests.moderation.helpers import member_message

    describe_group(bot)
    run(command("/warn", reply_to=member_message(OTHER, "Oscar")))  # @oscar
    run(command("/warn", reply_to=member_message(MEMBER, "Mallory")))  # @mallory
    renamed = member_message(MEMBER, "Mallory")
    renamed["from"]["username"] = "mal_new"
    run(command("/warn", reply_to=renamed))
    oscar = member_message(OTHER, "Oscar")
    oscar["from"]["username"] = "mallory"  # the name Mallory gave up
    run(command("/warn", reply_to=oscar))
    run(command("/ban @mallory"))
    assert [c.params["user_id"] for c in ok_calls(bot, "banChatMember")] == [OTHER]


def test_an_answer_in_a_forum_topic_goes_to_that_topic(bot: FakeTelegramServer) -> None:
    """Without message_thread_id the answer went to the General topic, away from the command."""
    from tests.moderation.helpers import DELETER

    describe_group(bot)
    bot.set_chat(GROUP, "supergroup", title="Test group", is_forum=True)
    run(_in_topic("/purge", sender=DELETER, root_id=2000, message_id=2300))
    [answer] = bot.calls_to("sendMessage")
    assert answer.params["message_thread_id"] == 2000
    assert answer.params["text"].startswith("Reply to")
