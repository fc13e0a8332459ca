"""Spam-list check on join: a joiner on the local list or listed by a CAS-shaped service gets
the chat's action (ban, or remove), before any captcha or welcome, once per stay, audited;
a silent service costs a join its time budget only, and lets the joiner in unless the
operator chose to fail closed. End to end through the webhook, against the fake Bot API and a
fake spam-check service."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from community.models import MemberPolicy, SpamListEntry
from config.env import ConfigError
from moderation.rules.models import Approval
from telegram_bot.jobs.models import Job
from telegram_bot.jobs.runner import new_owner, run_due
from telegram_bot.models import AuditEntry
from tests.community.helpers import make_jobs_due, succeeded
from tests.community.members_helpers import (
    GROUP,
    join_update,
    make_policy,
    processed,
    sent_to,
    service_update,
)
from tests.fakes.spamcheck import FakeSpamService, Script
from tests.fakes.telegram import FakeTelegramServer
from tests.unit.config.test_settings import read

pytestmark = pytest.mark.django_db
SPAMMER = 6660001
HONEST = 6660002


@pytest.fixture
def service(settings: Any) -> Iterator[FakeSpamService]:
    fake = FakeSpamService(listed={SPAMMER}).start()
    settings.SPAMCHECK_URL = fake.url
    settings.SPAMCHECK_TIMEOUT_MS = 300
    settings.SPAMCHECK_CACHE_SECONDS = 3600
    settings.SPAMCHECK_FAIL_OPEN = True
    try:
        yield fake
    finally:
        fake.stop()


def banned(bot: FakeTelegramServer) -> list[dict[str, Any]]:
    return [call.params for call in succeeded(bot, "banChatMember")]


def spam_entries() -> list[AuditEntry]:
    return list(AuditEntry.objects.filter(cause="spamlist").order_by("pk"))


def welcome_policy(**fields: Any) -> None:
    make_policy(welcome_enabled=True, welcome_text="Welcome, {first_name}!", **fields)


def test_a_locally_listed_joiner_is_banned_once_and_never_welcomed(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    welcome_policy(captcha_enabled=True)
    SpamListEntry.objects.create(user_id=SPAMMER, source="cas", reason="ads")
    join = join_update(SPAMMER)
    processed(post_update, join)
    processed(post_update, join)  # re-delivered
    processed(post_update, dict(join, update_id=join["update_id"] + 50_000))  # another copy
    processed(post_update, service_update(joined=[SPAMMER]))  # its service-message twin
    [ban, *repeats] = banned(bot)
    assert ban["chat_id"] == GROUP and ban["user_id"] == SPAMMER and "until_date" not in ban
    assert all(repeat == ban for repeat in repeats)  # idempotent repeats only
    assert bot.calls_to("restrictChatMember") == [] and sent_to(bot) == []
    [entry] = spam_entries()
    assert (entry.action, entry.source, entry.target_id) == ("ban", "auto", SPAMMER)
    assert entry.reason == "spam list (cas): ads"


def test_an_honest_joiner_is_welcomed_and_the_list_is_per_account(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    welcome_policy()
    SpamListEntry.objects.create(user_id=SPAMMER, source="local")
    processed(post_update, join_update(HONEST, first_name="Bea"))
    assert banned(bot) == [] and sent_to(bot) == ["Welcome, Bea!"]
    assert spam_entries() == []


def test_remove_lets_them_ask_again_and_off_lets_them_in(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    welcome_policy(spam_action="kick")
    SpamListEntry.objects.create(user_id=SPAMMER, source="local")
    processed(post_update, join_update(SPAMMER))
    [ban] = banned(bot)
    assert ban["until_date"] > time.time()  # a short ban, lifted at once
    assert [c.params["user_id"] for c in succeeded(bot, "unbanChatMember")] == [SPAMMER]
    assert [e.action for e in spam_entries()] == ["kick"]

    MemberPolicy.objects.filter(chat_id=GROUP).update(spam_action="off")
    SpamListEntry.objects.create(user_id=SPAMMER + 1, source="local")
    processed(post_update, join_update(SPAMMER + 1, first_name="Sid"))
    assert [c["user_id"] for c in banned(bot)] == [SPAMMER]  # nothing more
    assert sent_to(bot)[-1] == "Welcome, Sid!"


def test_an_approved_member_is_not_checked(bot: FakeTelegramServer, post_update: Any) -> None:
    welcome_policy()
    trusted = SPAMMER + 7  # an id of its own: approvals are cached per process for a while
    SpamListEntry.objects.create(user_id=trusted, source="local")
    Approval.objects.create(chat_id=GROUP, user_id=trusted)
    processed(post_update, join_update(trusted, first_name="Sam"))
    assert banned(bot) == [] and sent_to(bot) == ["Welcome, Sam!"]


def test_a_joiner_listed_by_the_service_is_banned_and_its_answer_cached(
    bot: FakeTelegramServer, post_update: Any, service: FakeSpamService
) -> None:
    welcome_policy()
    processed(post_update, join_update(SPAMMER))
    processed(post_update, join_update(HONEST, first_name="Bea"))
    processed(post_update, join_update(SPAMMER, chat_id=GROUP - 1))  # another chat: cached
    processed(post_update, join_update(HONEST, chat_id=GROUP - 1))
    assert sorted(service.asked) == [SPAMMER, HONEST]
    assert [c["user_id"] for c in banned(bot)] == [SPAMMER]  # no policy in the other chat
    [entry] = spam_entries()
    assert entry.reason == "spam list (service): offenses: 3"
    assert sent_to(bot) == ["Welcome, Bea!"]


@pytest.mark.parametrize(
    "script",
    [
        Script(status=500, body=b"oops"),
        Script(body=b"<html>not json</html>"),
        Script(body=json.dumps({"ok": "yes"}).encode()),
        Script(body=json.dumps([1, 2]).encode()),
        Script(body=b"{" + b" " * 70_000 + b"}"),
        Script(delay=5.0),
    ],
    ids=["error", "not-json", "no-boolean", "not-an-object", "too-large", "silent"],
)
def test_a_service_without_a_verdict_lets_the_joiner_in_within_its_budget(
    bot: FakeTelegramServer, post_update: Any, service: FakeSpamService, script: Script
) -> None:
    welcome_policy()
    service.script = script
    started = time.monotonic()
    processed(post_update, join_update(SPAMMER, first_name="Sam"))
    assert time.monotonic() - started < 3  # the 5 s silence cost the 300 ms budget, not 5 s
    assert banned(bot) == [] and sent_to(bot) == ["Welcome, Sam!"]
    # Not cached: the next join asks again, and a verdict then counts.
    service.script = Script()
    processed(post_update, join_update(SPAMMER, chat_id=GROUP, date=int(time.time()) + 5))
    assert service.asked.count(SPAMMER) >= 1


def test_fail_closed_treats_a_silent_service_as_a_listing(
    bot: FakeTelegramServer, post_update: Any, service: FakeSpamService, settings: Any
) -> None:
    settings.SPAMCHECK_FAIL_OPEN = False
    welcome_policy()
    service.script = Script(delay=5.0)
    processed(post_update, join_update(HONEST))
    assert [c["user_id"] for c in banned(bot)] == [HONEST] and sent_to(bot) == []
    [entry] = spam_entries()
    assert "did not answer" in entry.reason


def test_a_ban_telegram_does_not_take_at_once_is_retried_by_a_job(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    make_policy()
    SpamListEntry.objects.create(user_id=SPAMMER, source="local")
    bot.fail_next("banChatMember", status=429, retry_after=1)
    processed(post_update, join_update(SPAMMER))
    assert banned(bot) == []
    assert Job.objects.filter(kind="community.spam_ban").count() == 1
    make_jobs_due()
    run_due(new_owner())
    assert [c["user_id"] for c in banned(bot)] == [SPAMMER]


# --- the import command ----------------------------------------------------------------------


def test_the_import_reads_ids_with_reasons_and_skips_comments(tmp_path: Path) -> None:
    path = tmp_path / "list.csv"
    path.write_text("# CAS export\n101\n102, flood bot\n\n103\tads\n101\n", encoding="utf-8")
    out = io.StringIO()
    call_command("import_spamlist", str(path), "--source", "cas", stdout=out)
    assert "3 accounts in the cas list" in out.getvalue()
    rows = dict(SpamListEntry.objects.values_list("user_id", "reason"))
    assert rows == {101: "", 102: "flood bot", 103: "ads"}


def test_a_bad_line_imports_nothing(tmp_path: Path) -> None:
    path = tmp_path / "list.txt"
    path.write_text("101\n@spammer\n0\n102\n", encoding="utf-8")
    with pytest.raises(CommandError) as raised:
        call_command("import_spamlist", str(path))
    assert "nothing imported" in str(raised.value) and "line 2" in str(raised.value)
    assert "line 3" in str(raised.value)
    assert not SpamListEntry.objects.exists()


def test_replace_drops_what_the_source_no_longer_lists(tmp_path: Path) -> None:
    SpamListEntry.objects.create(user_id=7, source="other")
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_text("101\n102\n", encoding="utf-8")
    second.write_text("102\n103\n", encoding="utf-8")
    call_command("import_spamlist", str(first), "--source", "cas", stdout=io.StringIO())
    out = io.StringIO()
    call_command("import_spamlist", str(second), "--source", "cas", "--replace", stdout=out)
    assert "1 dropped" in out.getvalue()
    assert sorted(SpamListEntry.objects.values_list("user_id", flat=True)) == [7, 102, 103]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["/nonexistent/list.txt"], "cannot read"),
        (["-", "--source", "Bad Name!"], "--source"),
    ],
)
def test_bad_arguments_are_refused_in_one_line(args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        call_command("import_spamlist", *args)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("SPAMCHECK_URL", "ftp://example.com/check"),
        ("SPAMCHECK_TIMEOUT_MS", "10"),
        ("SPAMCHECK_CACHE_SECONDS", "-1"),
        ("SPAMCHECK_FAIL_OPEN", "perhaps"),
    ],
)
def test_bad_spam_check_settings_stop_the_start(name: str, value: str) -> None:
    with pytest.raises(ConfigError, match=name):
        read({name: value})
