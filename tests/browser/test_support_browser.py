"""The support desk in a real browser: a ticket opened through the webhook is answered and
resolved from the admin site, and the answer arrives at the (fake) Bot API."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import make_message_update
from tests.conftest import WEBHOOK_SECRET
from tests.fakes.telegram import FakeTelegramServer

USER = 4242


@pytest.fixture
def wired(live_bot: FakeTelegramServer) -> FakeTelegramServer:
    return live_bot


def texts_to(fake: FakeTelegramServer, chat_id: int) -> list[str]:
    return [
        call.params["text"]
        for call in fake.calls_to("sendMessage")
        if not call.failed and call.params["chat_id"] == chat_id
    ]


@pytest.mark.django_db(transaction=True)
def test_an_operator_answers_and_resolves_a_ticket_in_the_admin_site(
    admin_page: Any, live_server: Any, wired: FakeTelegramServer
) -> None:
    import httpx

    update = make_message_update(
        "/support The export button does nothing", chat_id=USER, user_id=USER
    )
    response = httpx.post(
        f"{live_server.url}/telegram/webhook",
        json=update,
        headers={"X-Telegram-Bot-Api-Secret-Token": WEBHOOK_SECRET},
    )
    assert response.headers["X-Update-Outcome"] == "processed"
    assert texts_to(wired, USER)[0].startswith("Ticket #1 opened.")

    admin_page.goto(f"{live_server.url}/admin/")
    admin_page.click("text=Tickets")
    admin_page.click("#result_list a:has-text('#1')")
    assert "The export button does nothing" in admin_page.inner_text("#conversation")

    admin_page.fill("#reply-text", "Fixed in version 2.1, please update.")
    admin_page.click("#reply-submit")
    admin_page.wait_for_selector(".messagelist")
    assert "Reply sent to the user of ticket #1." in admin_page.inner_text(".messagelist")
    assert (
        texts_to(wired, USER)[-1] == "Support · ticket #1\n\nFixed in version 2.1, please update."
    )
    conversation = admin_page.inner_text("#conversation")
    assert "Fixed in version 2.1" in conversation and "to the user: delivered" in conversation
    assert admin_page.inner_text("#ticket-first-response") != "—"

    admin_page.click("#resolve-submit")
    admin_page.wait_for_selector("#reopen-form")
    assert texts_to(wired, USER)[-1].startswith("Ticket #1 was resolved by support.")
    assert admin_page.inner_text("#ticket-status").startswith("closed")
