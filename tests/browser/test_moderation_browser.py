"""Moderation in a real browser: a /ban through the webhook shows up in the audit log, which
an operator filters, searches and exports to CSV; a chat's settings are edited (a value out of
Telegram's range is refused) and the change is audited."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from moderation.models import ChatSettings
from tests.conftest import WEBHOOK_SECRET
from tests.fakes.telegram import FakeTelegramServer
from tests.moderation.helpers import GROUP, MEMBER, command, describe_group, member_message


def _post(live_server: Any, update: dict[str, Any]) -> str:
    import httpx

    response = httpx.post(
        f"{live_server.url}/telegram/webhook",
        json=update,
        headers={"X-Telegram-Bot-Api-Secret-Token": WEBHOOK_SECRET},
    )
    return str(response.headers["X-Update-Outcome"])


@pytest.mark.django_db(transaction=True)
def test_the_audit_log_lists_filters_searches_and_exports(
    admin_page: Any, live_server: Any, live_bot: FakeTelegramServer, tmp_path: Path
) -> None:
    describe_group(live_bot)
    assert _post(live_server, command("/ban 7d spam links", reply_to=member_message())) == (
        "processed"
    )
    other = member_message(5010, "Eve")
    assert _post(live_server, command("/warn rude", reply_to=other)) == "processed"

    page = admin_page
    page.goto(f"{live_server.url}/admin/")
    page.click("text=Audit log")
    table = page.inner_text("#result_list")
    assert "Mallory" in table and "Eve" in table and "spam links" in table
    page.click("a[x-on\\:click*='filterOpen']")  # unfold's filter panel opens on its button
    page.click("#changelist-filter a:has-text('ban')")
    table = page.inner_text("#result_list")
    assert "Mallory" in table and "Eve" not in table
    page.goto(f"{live_server.url}/admin/telegram_bot/auditentry/")
    page.fill("#searchbar", "5010")
    page.press("#searchbar", "Enter")
    page.wait_for_load_state()
    table = page.inner_text("#result_list")
    assert "Eve" in table and "Mallory" not in table

    page.goto(f"{live_server.url}/admin/telegram_bot/auditentry/")
    page.check("#action-toggle")
    page.select_option("select[name=action]", "export_csv")
    with page.expect_download() as download:
        page.click("#changelist-actions button[type=submit]")
    saved = tmp_path / "audit.csv"
    download.value.save_as(saved)
    assert saved.read_bytes().startswith(b"\xef\xbb\xbf")  # the BOM spreadsheets need
    lines = saved.read_text(encoding="utf-8-sig").splitlines()
    assert lines[0].startswith("created_at,actor_id")
    assert len(lines) == 3 and any(f",{MEMBER}," in line for line in lines)


@pytest.mark.django_db(transaction=True)
def test_chat_settings_are_edited_validated_and_audited(
    admin_page: Any, live_server: Any, live_bot: FakeTelegramServer
) -> None:
    from community.models import BotChat

    BotChat.objects.create(
        chat_id=GROUP, title="Test group", chat_type="supergroup", status="member", is_member=True
    )
    page = admin_page
    page.goto(f"{live_server.url}/admin/moderation/chatsettings/add/")
    page.select_option("#id_chat_id", label="Test group")  # the bot's chats, by title
    page.fill("#id_title", "Test group")
    page.fill("#id_flood_action_seconds", "5s")  # under Telegram's 30 seconds
    page.select_option("#id_violation_high", "ban")
    page.click("[name=_save]")
    assert "30" in page.inner_text(".errorlist")
    assert not ChatSettings.objects.exists()
    page.fill("#id_flood_action_seconds", "15m")
    page.click("[name=_save]")
    page.wait_for_selector(".messagelist")
    row = ChatSettings.objects.get(chat_id=GROUP)
    assert (row.flood_action_seconds, row.violation_high) == (900, "ban")

    page.goto(f"{live_server.url}/admin/telegram_bot/auditentry/")
    table = page.inner_text("#result_list")
    assert "operator changed the chat's moderation settings" in table
