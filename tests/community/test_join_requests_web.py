"""Join requests decided in the web console (community.web): the same decision as the buttons
in Telegram, the first one wins whoever makes it, audited; only staff who may change the
join-request policies decide, and the overview's card opens the list."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from telegram_bot.models import AuditEntry
from tests.community.helpers import button_data, notifications, press_update
from tests.community.test_join_requests import CHAT, REQUESTER, request_join
from tests.conftest import OWNER_ID
from tests.fakes.telegram import FakeTelegramServer

pytestmark = pytest.mark.django_db
LIST = "/admin/community/join-requests/"


def token_on(page: str) -> str:
    found = re.search(r'data-token="([^"]+)"', page)
    assert found is not None, "no request listed"
    return found.group(1)


def test_an_operator_approves_a_request_in_the_web(
    bot: FakeTelegramServer, post_update: Any, admin_client: Client
) -> None:
    request_join(post_update)
    page = admin_client.get(LIST).content.decode()
    token = token_on(page)
    decide = f"{LIST}{token}/decide/"
    response = admin_client.post(decide, {"action": "approve"}, follow=True)
    assert response.status_code == 200
    assert [call.params["user_id"] for call in bot.calls_to("approveChatJoinRequest")] == [
        REQUESTER
    ]
    assert 'id="no-join-requests"' in response.content.decode()
    # A second decision, in the web or in Telegram, is refused: the first one won.
    admin_client.post(decide, {"action": "decline"})
    post_update(press_update(button_data(notifications(bot)[0])["Decline"], user_id=OWNER_ID))
    assert bot.calls_to("declineChatJoinRequest") == []
    recorded = [
        (e.action, e.source, e.actor_name, e.chat_id, e.target_id, e.outcome)
        for e in AuditEntry.objects.order_by("id")
        if e.action.startswith("join_request.")
    ]
    assert recorded[:2] == [
        ("join_request.approve", "admin", "admin:admin", CHAT, REQUESTER, "done"),
        ("join_request.decline", "admin", "admin:admin", CHAT, REQUESTER, "refused"),
    ]
    assert recorded[2][1:2] == ("button",) and recorded[2][-1] == "refused"


def test_a_decision_in_telegram_first_wins_over_the_web(
    bot: FakeTelegramServer, post_update: Any, admin_client: Client
) -> None:
    request_join(post_update)
    token = token_on(admin_client.get(LIST).content.decode())
    post_update(press_update(button_data(notifications(bot)[0])["Decline"], user_id=OWNER_ID))
    response = admin_client.post(f"{LIST}{token}/decide/", {"action": "approve"}, follow=True)
    assert "Already decided" in response.content.decode()
    assert bot.calls_to("approveChatJoinRequest") == []


def test_only_staff_who_may_change_policies_decide(
    bot: FakeTelegramServer, post_update: Any, client: Client, django_user_model: Any
) -> None:
    request_join(post_update)
    viewer = django_user_model.objects.create_user("viewer", password="pw-x-1234", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_chatpolicy"))
    client.force_login(viewer)
    page = client.get(LIST).content.decode()
    token = token_on(page)
    assert 'value="approve"' not in page  # no buttons for a viewer
    assert client.post(f"{LIST}{token}/decide/", {"action": "approve"}).status_code == 403
    assert bot.calls_to("approveChatJoinRequest") == []
    nobody = django_user_model.objects.create_user("nobody", password="pw-x-1234", is_staff=True)
    client.force_login(nobody)
    assert client.get(LIST).status_code == 403


@pytest.mark.parametrize(
    ("token", "data", "status"),
    [
        ("a" * 12, {"action": "approve"}, 302),  # no such request: told, nothing called
        ("x", {"action": "ban"}, 400),
        ("x", {}, 400),
    ],
)
def test_bad_input_is_refused_and_calls_nothing(
    bot: FakeTelegramServer, admin_client: Client, token: str, data: dict[str, str], status: int
) -> None:
    assert admin_client.post(f"{LIST}{token}/decide/", data).status_code == status
    assert admin_client.get(f"{LIST}{token}/decide/").status_code == 405
    assert bot.calls == []


def test_the_overview_card_opens_the_list(
    bot: FakeTelegramServer, post_update: Any, admin_client: Client
) -> None:
    request_join(post_update)
    cards = {card.key: card for card in admin_client.get("/admin/").context["overview_cards"]}
    card = cards["join-requests"]
    assert card.value == "1" and card.url == LIST
    assert admin_client.get(card.url).content.decode().count('class="join-request"') == 1
