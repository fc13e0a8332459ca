"""The dead-letter pages in a real browser: see a failed update, replay it, see it gone."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import make_message_update
from tests.conftest import WEBHOOK_SECRET
from tests.fakes.telegram import FakeTelegramServer


@pytest.fixture
def wired(live_bot: FakeTelegramServer) -> FakeTelegramServer:
    return live_bot


@pytest.mark.django_db(transaction=True)
def test_an_operator_replays_a_dead_letter(
    admin_page: Any, live_server: Any, wired: FakeTelegramServer
) -> None:
    import httpx

    wired.fail_next("sendMessage", status=400, description="Bad Request: chat not found")
    update = make_message_update("/start", chat_id=42, user_id=42)
    response = httpx.post(
        f"{live_server.url}/telegram/webhook",
        json=update,
        headers={"X-Telegram-Bot-Api-Secret-Token": WEBHOOK_SECRET},
    )
    assert response.headers["X-Update-Outcome"] == "dead_letter"

    admin_page.goto(f"{live_server.url}/admin/")
    admin_page.click("#content a:has-text('Dead letters')")  # System folds in the sidebar
    row = admin_page.locator(f'tr[data-update-id="{update["update_id"]}"]')
    assert "TelegramApiError" in row.inner_text()
    assert "chat not found" in row.inner_text()
    row.locator("button", has_text="Replay").click()
    admin_page.wait_for_selector("#no-dead-letters")
    assert "replayed: processed" in admin_page.inner_text(".messagelist")
    delivered = [c for c in wired.calls_to("sendMessage") if not c.failed]
    assert [c.params["chat_id"] for c in delivered] == [42]
