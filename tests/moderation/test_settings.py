"""Per-chat settings: safe defaults, the admin site (validated, audited) and the Telegram
panel (validated, audited, a re-delivered press changes nothing twice)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from moderation.models import ChatSettings
from telegram_bot.models import AuditEntry
from telegram_bot.pipeline.process import Outcome, process_update
from tests.builders import make_callback_update
from tests.conftest import OWNER_ID
from tests.fakes.telegram import FakeTelegramServer
from tests.moderation.helpers import GROUP

pytestmark = pytest.mark.django_db


def test_defaults_are_safe() -> None:
    row = ChatSettings(chat_id=GROUP)
    assert [row.violation_action(s) for s in ("low", "medium", "high")] == ["none"] * 3
    assert (row.warn_limit, row.warn_action, row.warn_action_seconds) == (3, "mute", 86400)
    assert (row.flood_action, row.flood_action_seconds) == ("mute", 600)


def _superuser() -> Client:
    account = User.objects.create_superuser("root", "r@example.org", "x")
    client = Client()
    client.force_login(account)
    return client


def test_admin_site_validates_and_audits() -> None:
    client = _superuser()
    url = "/admin/moderation/chatsettings/add/"
    form = {
        "chat_id": GROUP,
        "title": "Test group",
        "warn_limit": 5,
        "warn_action": "ban",
        "warn_action_seconds": "10s",  # under Telegram's 30 s
        "warn_expiry_days": 30,
        "flood_action": "mute",
        "flood_messages": 8,
        "flood_seconds": "10s",
        "flood_action_seconds": "10m",
        "violation_low": "none",
        "violation_medium": "delete",
        "violation_high": "ban",
        "violation_action_seconds": "1h",
    }
    refused = client.post(url, form)
    assert refused.status_code == 200 and b"30" in refused.content
    assert not ChatSettings.objects.exists()
    form["warn_action_seconds"] = "2h"
    assert client.post(url, form).status_code == 302
    row = ChatSettings.objects.get(chat_id=GROUP)
    assert (row.warn_limit, row.violation_high) == (5, "ban")
    entry = AuditEntry.objects.get(action="settings")
    assert entry.source == "admin" and entry.actor_name == "admin:root"
    assert "violation_high=ban" in entry.detail
    assert client.get("/admin/moderation/chatsettings/", {"q": "abc"}).status_code == 200


def test_panel_toggles_are_validated_audited_and_once(bot: FakeTelegramServer) -> None:
    press = make_callback_update(f"mod:s:{GROUP}:warn=4", user_id=OWNER_ID)
    process_update(press)
    process_update(make_callback_update(f"mod:s:{GROUP}:high=delete", user_id=OWNER_ID))
    process_update(make_callback_update(f"mod:s:{GROUP}:flood=off", user_id=OWNER_ID))
    row = ChatSettings.objects.get(chat_id=GROUP)
    assert (row.warn_limit, row.violation_high, row.flood_action) == (4, "delete", "none")
    # The same press again (a re-delivery the done-marker did not catch).
    from telegram_bot.pipeline import idempotency
    from telegram_bot.state import get_store

    get_store().delete(idempotency.marker_key(press["update_id"]))
    process_update(press)
    assert ChatSettings.objects.get(chat_id=GROUP).warn_limit == 4
    assert list(AuditEntry.objects.order_by("id").values_list("detail", flat=True)) == [
        "warn_limit=4",
        "violation_high=delete",
        "flood_action=none",
    ]
    edits = [c.params["text"] for c in bot.calls_to("editMessageText") if not c.failed]
    assert "Warnings: 4 -> mute for 1d" in edits[0]
    assert "Anti-flood: off" in edits[-1]


def test_panel_lists_chats_and_refuses_members_and_bad_buttons(bot: FakeTelegramServer) -> None:
    ChatSettings.objects.create(chat_id=GROUP, title="Test group")
    process_update(make_callback_update("mod:p", user_id=OWNER_ID))
    [page] = [c for c in bot.calls_to("editMessageText") if not c.failed]
    buttons = [
        b["callback_data"] for row in page.params["reply_markup"]["inline_keyboard"] for b in row
    ]
    assert f"mod:c:{GROUP}" in buttons and "Test group" in str(page.params["reply_markup"])
    process_update(make_callback_update(f"mod:s:{GROUP}:warn=4", user_id=5005))
    assert ChatSettings.objects.get(chat_id=GROUP).warn_limit == 3
    bad = [
        "mod:s:123:warn=4",
        f"mod:s:{GROUP}:rm-rf",
        "mod:s:-\u00b9\u00b2:warn=4",
        f"mod:s:{GROUP}:warn=21",
        f"mod:s:{GROUP}:warn=\u00b2",
        f"mod:s:{GROUP}:high=explode",
        f"mod:s:{GROUP}:flood=maybe",
        f"mod:s:{GROUP}:warn+",  # a button of the version before: it toggled
        "mod:s:-9999999999999999999:warn=4",  # past 64 bits: was a dead letter
    ]
    for data in bad:
        assert process_update(make_callback_update(data, user_id=OWNER_ID)) == Outcome.PROCESSED
    alerts = [c.params.get("text") for c in bot.calls_to("answerCallbackQuery")]
    assert alerts.count("This button is not valid.") == len(bad)
    assert not AuditEntry.objects.exists()


def test_actions_are_mirrored_to_the_chats_log_channel(bot: FakeTelegramServer) -> None:
    from django.utils import timezone

    from telegram_bot.jobs.models import Job
    from telegram_bot.jobs.runner import run_due
    from tests.moderation.helpers import command, describe_group, member_message, run

    describe_group(bot)
    ChatSettings.objects.create(chat_id=GROUP, log_chat_id=-100999)
    run(command("/ban 2h spam", reply_to=member_message()))
    run(command("/mute", reply_to=member_message(5010, "Eve")))
    assert Job.objects.filter(kind="core.audit_mirror").count() == 2
    Job.objects.update(next_attempt=timezone.now())
    assert run_due("test-worker") == 2
    lines = sorted(
        c.params["text"] for c in bot.calls_to("sendMessage") if c.params["chat_id"] == -100999
    )
    assert lines == [
        f"#ban in {GROUP} Mallory by Test: spam [for 2h]",
        f"#mute in {GROUP} Eve by Test",
    ]


def test_a_log_channel_must_be_a_group_or_channel_id() -> None:
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError, match="log_chat_id"):
        ChatSettings(chat_id=GROUP, log_chat_id=12345).full_clean()
