"""The member page's moderation actions (moderation.web): warn at once, mute for an hour, ban
and unban as ``moderation.act`` jobs that call Telegram and record the outcome, the operator
the actor of each; only with moderation's change permission, and only by POST with CSRF."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from moderation.models import ChatSettings, Warning
from telegram_bot.jobs.models import Job, JobStatus
from telegram_bot.jobs.runner import new_owner, run_due
from telegram_bot.models import AuditEntry
from tests.community.helpers import make_jobs_due
from tests.fakes.telegram import FakeTelegramServer
from tests.moderation.helpers import GROUP, MEMBER, describe_group

pytestmark = pytest.mark.django_db
ACT = f"/admin/moderation/member/{GROUP}/{MEMBER}/act/"
BACK = f"/admin/stats/member/{GROUP}/{MEMBER}/"


def audit() -> list[tuple[Any, ...]]:
    return list(
        AuditEntry.objects.order_by("id").values_list(
            "action", "actor_name", "source", "chat_id", "target_id", "reason", "outcome", "detail"
        )
    )


def test_a_mute_is_queued_as_a_job_and_audited_with_the_operator(
    bot: FakeTelegramServer, admin_client: Client
) -> None:
    describe_group(bot)
    response = admin_client.post(
        ACT, {"action": "mute", "reason": "flooding", "name": "Mallory", "next": BACK}
    )
    assert response.status_code == 302 and response["Location"] == BACK
    job = Job.objects.get(kind="moderation.act")
    assert job.payload["action"] == "mute" and job.payload["seconds"] == 3600
    assert bot.calls_to("restrictChatMember") == []  # not inside the web request
    assert audit() == []
    make_jobs_due()
    assert run_due(new_owner()) == 1
    assert bot.chat_member(GROUP, MEMBER)["status"] == "restricted"
    assert audit() == [
        ("mute", "admin:admin", "admin", GROUP, MEMBER, "flooding", "done", "for 1h")
    ]


def test_ban_and_unban_go_through_the_same_job(
    bot: FakeTelegramServer, admin_client: Client
) -> None:
    describe_group(bot)
    for action in ("ban", "unban"):
        admin_client.post(ACT, {"action": action, "name": "Mallory", "next": BACK})
        make_jobs_due()
        assert run_due(new_owner()) == 1
    assert [call.params["user_id"] for call in bot.calls_to("banChatMember")] == [MEMBER]
    assert [call.params["user_id"] for call in bot.calls_to("unbanChatMember")] == [MEMBER]
    assert [(a[0], a[1], a[6]) for a in audit()] == [
        ("ban", "admin:admin", "done"),
        ("unban", "admin:admin", "done"),
    ]


def test_a_refusal_by_telegram_is_recorded(bot: FakeTelegramServer, admin_client: Client) -> None:
    describe_group(bot)
    bot.fail_next("banChatMember", status=400, description="Bad Request: user is an administrator")
    admin_client.post(ACT, {"action": "ban", "name": "Mallory", "next": BACK})
    make_jobs_due()
    run_due(new_owner())
    assert [(a[0], a[6]) for a in audit()] == [("ban", "failed")]
    assert Job.objects.get(kind="moderation.act").status == JobStatus.FAILED


def test_a_warning_is_given_at_once_and_the_limit_queues_the_chats_action(
    bot: FakeTelegramServer, admin_client: Client
) -> None:
    describe_group(bot)
    ChatSettings.objects.create(chat_id=GROUP, warn_limit=2, warn_action="ban")
    for reason in ("one", "two"):
        admin_client.post(ACT, {"action": "warn", "reason": reason, "name": "Mallory"})
    assert list(Warning.objects.order_by("id").values_list("reason", flat=True)) == ["one", "two"]
    assert [(a[0], a[1], a[5], a[7]) for a in audit()] == [
        ("warn", "admin:admin", "one", "1/2"),
        ("warn", "admin:admin", "two", "2/2"),
    ]
    job = Job.objects.get(kind="moderation.act")
    assert (job.payload["action"], job.payload["cause"]) == ("ban", "warn_limit")


def test_acting_needs_moderations_change_permission(
    bot: FakeTelegramServer, admin_client: Client
) -> None:
    viewer = User.objects.create_user("viewer", is_staff=True)
    viewer.user_permissions.set(
        [Permission.objects.get(content_type__app_label="moderation", codename="view_warning")]
    )
    client = Client()
    client.force_login(viewer)
    assert client.post(ACT, {"action": "ban"}).status_code == 403
    assert admin_client.get(ACT).status_code == 405
    assert admin_client.post(ACT, {"action": "kick"}).status_code == 400
    checked = Client(enforce_csrf_checks=True)
    checked.force_login(User.objects.get(username="admin"))
    assert checked.post(ACT, {"action": "ban"}).status_code == 403
    assert not Job.objects.filter(kind="moderation.act").exists() and audit() == []
