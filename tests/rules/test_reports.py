"""Reports through the webhook: ``/report`` or ``@admin`` in reply to a member's message tells
the chat's admins who take reports (``/reports on`` in private), once; the first admin's
button decides (delete, warn, mute 1 h, ban, dismiss), through moderation's services under
their name; the others are told who decided; a member reports a message once and a few an
hour; refusals change nothing."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from moderation.rules.models import Report, ReportFlag, ReportOptIn
from moderation.rules.reports import REPORTS_PER_HOUR
from telegram_bot.jobs.runner import new_owner, run_due
from telegram_bot.models import AuditEntry
from telegram_bot.privacy import Subject
from tests.builders import make_callback_update, make_message, next_update_id
from tests.community.helpers import make_jobs_due
from tests.fakes.telegram import FakeTelegramServer
from tests.moderation.helpers import (
    CHAT_OWNER,
    DELETER,
    GROUP,
    MEMBER,
    MOD,
    OTHER,
    answers,
    describe_group,
    ok_calls,
)
from tests.rules.helpers import command, outcome, said, send

pytestmark = pytest.mark.django_db
REPORTER = 5010


@pytest.fixture(autouse=True)
def group(bot: FakeTelegramServer) -> FakeTelegramServer:
    describe_group(bot)
    return bot


def private(post_update: Any, user_id: int, text: str) -> str:
    message = make_message(text, chat_id=user_id, user_id=user_id, chat_type="private")
    return outcome(post_update, {"update_id": next_update_id(), "message": message})


def sent_privately(bot: FakeTelegramServer, user_id: int) -> list[Any]:
    return [c for c in ok_calls(bot, "sendMessage") if c.params["chat_id"] == user_id]


def notices(bot: FakeTelegramServer, user_id: int) -> list[Any]:
    return [c for c in sent_privately(bot, user_id) if "reply_markup" in c.params]


def press(
    post_update: Any, bot: FakeTelegramServer, admin: int, letter: str, *, of: int | None = None
) -> str:
    """``admin`` presses ``letter`` on the notice ``of`` got (their own by default)."""
    [notice] = notices(bot, admin if of is None else of)
    data = notice.params["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
    report_id = data.split(":")[1]
    update = make_callback_update(f"rp:{report_id}:{letter}", user_id=admin)
    return outcome(post_update, update)


def alerts(bot: FakeTelegramServer) -> list[str]:
    return [c.params.get("text", "") for c in ok_calls(bot, "answerCallbackQuery")]


def report_of(post_update: Any, message: dict[str, Any], *, by: int = REPORTER, **kw: Any) -> str:
    return command(post_update, "/report", sender=by, reply_to_message=message, **kw)


def test_a_report_reaches_the_admins_who_take_reports_once(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    private(post_update, MOD, "/reports on")
    assert sent_privately(bot, MOD)[-1].params["text"].startswith("You will get reports")
    bad = said("buy my stuff at spam.example", user_id=MEMBER, name="Mallory")
    update_id = next_update_id()
    message = make_message("/report", chat_id=GROUP, user_id=REPORTER, reply_to_message=bad)
    for _ in range(2):  # delivered twice
        outcome(post_update, {"update_id": update_id, "message": message})
    assert answers(bot) == ["Reported to the admins."]  # the copy is a duplicate
    [notice] = notices(bot, MOD)
    assert "Mallory" in notice.params["text"] and "buy my stuff" in notice.params["text"]
    assert f"https://t.me/c/777/{bad['message_id']}" in notice.params["text"]
    assert notices(bot, CHAT_OWNER) == []  # did not opt in
    report_of(post_update, bad)  # the same member again
    assert answers(bot)[-1] == "You reported this message already."
    report_of(post_update, bad, by=OTHER)  # another member: counted, no second notice
    assert answers(bot)[-1] == "Reported to the admins." and len(notices(bot, MOD)) == 1
    [report] = Report.objects.all()
    assert sorted(report.flags.values_list("reporter_id", flat=True)) == [OTHER, REPORTER]
    assert AuditEntry.objects.filter(action="rules.report").count() == 2


def test_the_first_decision_wins_and_every_notice_shows_it(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    private(post_update, MOD, "/reports on")
    private(post_update, CHAT_OWNER, "/reports on")
    bad = said("spam", user_id=MEMBER, name="Mallory")
    report_of(post_update, bad)
    assert len(notices(bot, MOD)) == 1 and len(notices(bot, CHAT_OWNER)) == 1
    ban_press = make_callback_update(
        notices(bot, MOD)[0].params["reply_markup"]["inline_keyboard"][1][0]["callback_data"],
        user_id=MOD,
    )
    assert ban_press["callback_query"]["data"].endswith(":b")
    outcome(post_update, ban_press)
    outcome(post_update, ban_press)  # re-delivered: nothing twice
    press(post_update, bot, CHAT_OWNER, "m")  # too late
    [ban] = ok_calls(bot, "banChatMember")
    assert ban.params["user_id"] == MEMBER and "until_date" not in ban.params
    assert [c.params["message_id"] for c in ok_calls(bot, "deleteMessage")] == [bad["message_id"]]
    assert ok_calls(bot, "restrictChatMember") == []
    assert alerts(bot)[-1].startswith("Already decided by")
    edited = {c.params["chat_id"] for c in ok_calls(bot, "editMessageText")}
    assert edited == {MOD, CHAT_OWNER}
    assert "Decided by" in ok_calls(bot, "editMessageText")[-1].params["text"]
    report = Report.objects.get()
    assert (report.status, report.decision, report.decided_by_id) == ("decided", "ban", MOD)
    [entry] = AuditEntry.objects.filter(action="ban")
    assert (entry.actor_id, entry.target_id, entry.cause) == (MOD, MEMBER, "report")
    report_of(post_update, bad, by=OTHER)
    assert answers(bot)[-1] == "The admins have dealt with that message already."


def test_a_decision_needs_the_right_it_uses(bot: FakeTelegramServer, post_update: Any) -> None:
    private(post_update, DELETER, "/reports on")
    bad = said("spam", user_id=MEMBER, name="Mallory")
    report_of(post_update, bad)
    press(post_update, bot, DELETER, "b")
    assert alerts(bot)[-1] == "You need the right to restrict members for that."
    assert Report.objects.get().status == "open" and ok_calls(bot, "banChatMember") == []
    press(post_update, bot, OTHER, "d", of=DELETER)  # a member who got hold of the button
    assert alerts(bot)[-1] == "Only the chat's admins can do that."
    press(post_update, bot, DELETER, "d")
    assert [c.params["message_id"] for c in ok_calls(bot, "deleteMessage")] == [bad["message_id"]]
    assert Report.objects.get().decision == "delete"


@pytest.mark.parametrize(
    ("letter", "calls"),
    [
        ("w", {"deleteMessage": 1, "restrictChatMember": 0}),
        ("m", {"deleteMessage": 1, "restrictChatMember": 1}),
        ("x", {"deleteMessage": 0, "restrictChatMember": 0}),
    ],
)
def test_warn_mute_and_dismiss(
    bot: FakeTelegramServer, post_update: Any, letter: str, calls: dict[str, int]
) -> None:
    private(post_update, MOD, "/reports on")
    report_of(post_update, said("spam", user_id=MEMBER, name="Mallory"))
    press(post_update, bot, MOD, letter)
    for method, count in calls.items():
        assert len(ok_calls(bot, method)) == count, method
    actions = set(AuditEntry.objects.filter(actor_id=MOD).values_list("action", flat=True))
    expected = {"w": {"warn", "delete"}, "m": {"mute", "delete"}, "x": {"rules.report_dismiss"}}
    assert actions == expected[letter]
    if letter == "m":
        until = ok_calls(bot, "restrictChatMember")[0].params["until_date"]
        assert 3500 < until - ok_calls(bot, "restrictChatMember")[0].time < 3700


def test_a_deletion_telegram_asks_to_retry_is_done_by_a_job(
    bot: FakeTelegramServer, post_update: Any, settings: Any
) -> None:
    settings.JOB_RETRY_BASE_DELAY = 0.01
    private(post_update, DELETER, "/reports on")
    bad = said("spam", user_id=MEMBER)
    report_of(post_update, bad)
    bot.fail_next("deleteMessage", status=429, retry_after=1)
    press(post_update, bot, DELETER, "d")
    assert ok_calls(bot, "deleteMessage") == []
    make_jobs_due()
    run_due(new_owner())
    assert [c.params["message_id"] for c in ok_calls(bot, "deleteMessage")] == [bad["message_id"]]
    assert AuditEntry.objects.filter(action="delete", cause="report", outcome="done").count() == 1


def test_an_admin_mention_in_a_reply_reports_and_elsewhere_does_nothing(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    private(post_update, MOD, "/reports on")
    bad = said("spam", user_id=MEMBER)
    send(post_update, said("@admin look at this", user_id=REPORTER, reply_to_message=bad))
    assert answers(bot) == ["Reported to the admins."] and len(notices(bot, MOD)) == 1
    send(post_update, said("write to x@admin.org or @admins", user_id=OTHER))  # not a reply
    send(post_update, said("mail me: me@admins.example", user_id=OTHER, reply_to_message=bad))
    assert answers(bot) == ["Reported to the admins."]


def test_refusals_change_nothing(bot: FakeTelegramServer, post_update: Any) -> None:
    private(post_update, MOD, "/reports on")
    mine = said("hi", user_id=REPORTER)
    admins = said("rules are rules", user_id=MOD)
    command(post_update, "/report", sender=REPORTER)
    report_of(post_update, mine)
    report_of(post_update, admins)
    report_of(post_update, said("spam", user_id=MEMBER), by=MOD)
    assert answers(bot) == [
        "Reply to the message you want to report with /report.",
        "You can't report your own message.",
        "Admins' messages can't be reported.",
        "You are an admin here: act on it yourself (/del, /warn, /mute, /ban).",
    ]
    assert not Report.objects.exists() and notices(bot, MOD) == []


def test_admins_turn_reports_off_in_a_chat(bot: FakeTelegramServer, post_update: Any) -> None:
    command(post_update, "/reports off", sender=REPORTER)
    assert answers(bot)[-1] == "Only the chat's admins can do that."
    command(post_update, "/reports maybe", sender=DELETER)
    assert answers(bot)[-1] == "Say /reports on or /reports off."
    command(post_update, "/reports off", sender=DELETER)
    report_of(post_update, said("spam", user_id=MEMBER))
    command(post_update, "/reports", sender=REPORTER)
    assert answers(bot)[-3:] == ["Reports are off in this chat."] * 3
    assert not Report.objects.exists()
    command(post_update, "/reports on", sender=DELETER)
    report_of(post_update, said("spam", user_id=MEMBER))
    assert Report.objects.count() == 1


def test_without_an_admin_taking_reports_the_member_is_told(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    report_of(post_update, said("spam", user_id=MEMBER))
    assert "an admin can send /reports on" in answers(bot)[-1]
    private(post_update, MOD, "/reports off")
    assert sent_privately(bot, MOD)[-1].params["text"] == "You will no longer get reports."
    assert not ReportOptIn.objects.exists()


def test_a_member_reports_a_few_messages_an_hour(bot: FakeTelegramServer, post_update: Any) -> None:
    for _ in range(REPORTS_PER_HOUR):
        report_of(post_update, said("spam", user_id=MEMBER))
    report_of(post_update, said("more spam", user_id=MEMBER))
    assert answers(bot)[-1].startswith(f"You have reported {REPORTS_PER_HOUR} messages")
    assert ReportFlag.objects.filter(reporter_id=REPORTER).count() == REPORTS_PER_HOUR


def test_erasure_forgets_reporters_authors_and_deciders(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    from moderation.rules import privacy
    from telegram_bot.state import get_store

    private(post_update, MOD, "/reports on")
    report_of(post_update, said("spam", user_id=MEMBER))
    report_of(post_update, said("other", user_id=OTHER))
    store = get_store()

    def subject(user_id: int) -> Subject:
        return Subject(user_id=user_id, anonymous_id=2**52 + user_id, marker_prefix="e:t:")

    assert privacy.export(REPORTER, store)["reports_you_made"]
    privacy.erase(subject(REPORTER), store)
    assert not ReportFlag.objects.filter(reporter_id=REPORTER).exists()
    privacy.erase(subject(MEMBER), store)
    assert list(Report.objects.values_list("target_id", flat=True)) == [OTHER]
    privacy.erase(subject(MOD), store)
    assert not ReportOptIn.objects.exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(60)
def test_two_admins_pressing_at_once_make_one_decision(
    bot: FakeTelegramServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from django.db import connections

    from moderation.rules import reports
    from telegram_bot.pipeline.process import Outcome, process_update

    for admin in (MOD, CHAT_OWNER):
        process_update(
            {
                "update_id": next_update_id(),
                "message": make_message(
                    "/reports on", chat_id=admin, user_id=admin, chat_type="private"
                ),
            }
        )
    bad = said("spam", user_id=MEMBER)
    process_update(
        {
            "update_id": next_update_id(),
            "message": make_message(
                "/report", chat_id=GROUP, user_id=REPORTER, reply_to_message=bad
            ),
        }
    )
    report_id = Report.objects.get().pk
    # Both presses have read the open report before either claims it.
    barrier = threading.Barrier(2)
    read = reports.Report.objects.filter

    def filter_then_wait(*args: Any, **kwargs: Any) -> Any:
        rows = read(*args, **kwargs)
        if kwargs == {"pk": report_id}:
            rows = list(rows)  # read now
            barrier.wait(timeout=10)
            return _Rows(rows)
        return rows

    monkeypatch.setattr(reports.Report.objects, "filter", filter_then_wait)
    presses = {
        MOD: make_callback_update(f"rp:{report_id}:m", user_id=MOD),
        CHAT_OWNER: make_callback_update(f"rp:{report_id}:b", user_id=CHAT_OWNER),
    }
    outcomes: dict[int, Outcome] = {}

    def work(admin: int) -> None:
        try:
            outcomes[admin] = process_update(presses[admin])
        finally:
            connections.close_all()

    threads = [threading.Thread(target=work, args=(admin,)) for admin in presses]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    monkeypatch.undo()
    assert set(outcomes.values()) == {Outcome.PROCESSED}
    decision = Report.objects.get().decision
    penalties = len(ok_calls(bot, "banChatMember")) + len(ok_calls(bot, "restrictChatMember"))
    assert decision in ("mute", "ban") and penalties == 1
    assert len(ok_calls(bot, "deleteMessage")) == 1
    assert sum(a.startswith("Already decided by") for a in alerts(bot)) == 1


class _Rows(list):  # type: ignore[type-arg]
    """What ``filter(pk=...)`` gave, read already: ``first()`` as a queryset's."""

    def first(self) -> Any:
        return self[0] if self else None
