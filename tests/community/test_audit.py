"""Join-request decisions and policy edits in the audit log: who decided, in which chat, on
whom, with Telegram's outcome; once per update; a refused decision says why."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from telegram_bot.models import AuditEntry
from tests.community.helpers import button_data, notifications, press_update
from tests.community.test_join_requests import CHAT, REQUESTER, request_join
from tests.conftest import OWNER_ID
from tests.fakes.telegram import FakeTelegramServer

pytestmark = pytest.mark.django_db


def test_decisions_are_recorded_once_with_their_outcome(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    request_join(post_update)
    data = button_data(notifications(bot)[0])
    bot.fail_next(
        "approveChatJoinRequest", status=400, description="Bad Request: CHAT_ADMIN_REQUIRED"
    )
    post_update(press_update(data["Approve"], user_id=OWNER_ID, name="Olga"))
    decline = press_update(data["Decline"], user_id=OWNER_ID, name="Olga")
    post_update(decline)
    post_update(decline)  # a re-delivery
    post_update(press_update(data["Approve"], user_id=OWNER_ID, name="Olga"))  # too late
    recorded = [
        (e.action, e.source, e.actor_id, e.chat_id, e.target_id, e.outcome)
        for e in AuditEntry.objects.order_by("id")
    ]
    assert recorded == [
        ("join_request.approve", "button", OWNER_ID, CHAT, REQUESTER, "failed"),
        ("join_request.decline", "button", OWNER_ID, CHAT, REQUESTER, "done"),
        ("join_request.approve", "button", OWNER_ID, CHAT, REQUESTER, "refused"),
    ]
    failed, _, late = AuditEntry.objects.order_by("id")
    assert "CHAT_ADMIN_REQUIRED" in failed.detail
    assert late.detail.startswith("Already decided by Olga")


def test_policy_edits_in_the_admin_site_are_recorded(admin_client: Client) -> None:
    form = {
        "chat_id": "-100555",
        "title": "Main group",
        "mode": "auto_approve",
        "question": "",
        "answers": "",
        "timeout_seconds": "2m",
        "on_timeout": "decline",
        "on_wrong_answer": "admins",
        "welcome_text": "",
    }
    assert admin_client.post("/admin/community/chatpolicy/add/", form).status_code == 302
    (entry,) = AuditEntry.objects.all()
    assert (entry.action, entry.chat_id, entry.actor_name) == (
        "chatpolicy.add",
        -100555,
        "admin:admin",
    )
    assert "mode=auto_approve" in entry.detail


def test_a_decision_reaches_the_chats_log_channel(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    from django.utils import timezone

    from moderation.models import ChatSettings
    from telegram_bot.jobs.models import Job
    from telegram_bot.jobs.runner import run_due

    ChatSettings.objects.create(chat_id=CHAT, log_chat_id=-100999)  # moderation's setting
    request_join(post_update)
    data = button_data(notifications(bot)[0])
    post_update(press_update(data["Approve"], user_id=OWNER_ID, name="Olga"))
    Job.objects.filter(kind="core.audit_mirror").update(next_attempt=timezone.now())
    run_due("test-worker")
    [line] = [
        c.params["text"] for c in bot.calls_to("sendMessage") if c.params["chat_id"] == -100999
    ]
    assert line.startswith(f"#join_request_approve in {CHAT} Test")
    assert "by Olga" in line
