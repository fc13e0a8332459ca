"""The audit log records every operator action of the core once: jobs, dead letters, bot
admins (admin site, command and panel), django-q2's Resubmit, axes' cleanup, chat preferences;
a failed action records its failure; every app's entries reach the log channel."""

from __future__ import annotations

from typing import Any

import pytest
from axes.models import AccessAttempt
from django.test import Client
from django.utils import timezone
from django_q.models import Failure

from telegram_bot import audit
from telegram_bot.audit import Actor, audit_record, log_chats, register_log_chat
from telegram_bot.jobs.models import Job
from telegram_bot.jobs.runner import run_due
from telegram_bot.jobs.services import job_enqueue
from telegram_bot.models import AuditEntry, BotAdmin
from telegram_bot.pipeline.process import process_update
from tests.builders import make_callback_update, make_message_update
from tests.conftest import OWNER_ID
from tests.fakes.telegram import FakeTelegramServer
from tests.integration.test_admin_pages import poison

pytestmark = pytest.mark.django_db


def entries(action: str) -> list[AuditEntry]:
    return list(AuditEntry.objects.filter(action=action).order_by("id"))


def _action(client: Client, url: str, action: str, ids: list[Any]) -> Any:
    return client.post(url, {"action": action, "_selected_action": [str(i) for i in ids]})


def test_job_retry_and_cancel_are_recorded(bot: FakeTelegramServer, admin_client: Client) -> None:
    job = job_enqueue("core.noop", run_at=timezone.now() + timezone.timedelta(hours=1))
    _action(admin_client, "/admin/telegram_bot/job/", "retry_now", [job.pk])
    _action(admin_client, "/admin/telegram_bot/job/", "cancel", [job.pk])
    (retry,) = entries("job.retry")
    (cancel,) = entries("job.cancel")
    assert retry.actor_name == "admin:admin" and retry.source == "admin"
    assert retry.target_name == f"job #{job.pk} (1)" and retry.outcome == "done"
    assert cancel.target_name == f"job #{job.pk} (1)"
    assert Job.objects.get(pk=job.pk).status == "cancelled"


def test_dead_letter_replay_failure_success_and_drop_are_recorded(
    bot: FakeTelegramServer, post_update: Any, admin_client: Client
) -> None:
    update = poison(bot, post_update)
    replay = f"/admin/dead-letters/{update['update_id']}/replay/"
    bot.fail_next("sendMessage", status=400, description="Bad Request: chat not found")
    admin_client.post(replay)
    admin_client.post(replay)
    failed, done = entries("dead_letter.replay")
    assert failed.outcome == "failed" and "failed again with TelegramApiError" in failed.detail
    assert done.outcome == "done"
    assert done.target_name == f"dead letter of update {update['update_id']}"
    other = poison(bot, post_update)
    admin_client.post(f"/admin/dead-letters/{other['update_id']}/drop/")
    (drop,) = entries("dead_letter.drop")
    assert drop.actor_name == "admin:admin" and str(other["update_id"]) in drop.target_name


def test_bot_admins_added_and_removed_in_the_admin_site_are_recorded(
    bot: FakeTelegramServer, admin_client: Client
) -> None:
    admin_client.post("/admin/telegram_bot/botadmin/add/", {"telegram_id": "44"})
    added = BotAdmin.objects.get(telegram_id=44)
    admin_client.post(f"/admin/telegram_bot/botadmin/{added.pk}/delete/", {"post": "yes"})
    assert [(e.action, e.target_id, e.outcome) for e in AuditEntry.objects.order_by("id")] == [
        ("admin.add", 44, "done"),
        ("admin.remove", 44, "done"),
    ]


def test_bot_admins_managed_in_telegram_are_recorded_once(bot: FakeTelegramServer) -> None:
    add = make_message_update("/addadmin 77", chat_id=OWNER_ID, user_id=OWNER_ID)
    process_update(add)
    process_update(make_callback_update("panel:adm_rm:77", user_id=OWNER_ID, chat_id=OWNER_ID))
    process_update(add)  # a re-delivery
    # Refused (the owner cannot be removed): recorded with its failure.
    process_update(
        make_message_update(f"/removeadmin {OWNER_ID}", chat_id=OWNER_ID, user_id=OWNER_ID)
    )
    recorded = [
        (e.action, e.source, e.actor_id, e.target_id, e.outcome)
        for e in AuditEntry.objects.order_by("id")
    ]
    assert recorded == [
        ("admin.add", "command", OWNER_ID, 77, "done"),
        ("admin.remove", "panel", OWNER_ID, 77, "done"),
        ("admin.remove", "command", OWNER_ID, OWNER_ID, "failed"),
    ]
    assert AuditEntry.objects.latest("id").detail == "The owner cannot be removed."


def test_resubmit_and_axes_cleanup_are_recorded(admin_client: Client) -> None:
    failure = Failure.objects.create(
        id="a" * 32,
        name="t",
        func="telegram_bot.tasks.jobs_cleanup",
        started=timezone.now(),
        stopped=timezone.now(),
        success=False,
    )
    _action(admin_client, "/admin/django_q/failure/", "resubmit_tasks", [failure.pk])
    attempt = AccessAttempt.objects.create(
        username="x", ip_address="10.0.0.1", user_agent="", failures_since_start=1
    )
    response = _action(
        admin_client, "/admin/axes/accessattempt/", "cleanup_expired_attempts", [attempt.pk]
    )
    assert response.status_code == 302  # axes' own action was a server error here
    assert [e.action for e in AuditEntry.objects.order_by("id")] == [
        "task.resubmit",
        "login_attempts.cleanup",
    ]


def test_chat_preferences_saved_in_the_admin_site_are_recorded(admin_client: Client) -> None:
    admin_client.post(
        "/admin/telegram_bot/chatpreference/add/",
        {"chat_id": "-100555", "time_zone": "Europe/Moscow", "language": ""},
    )
    (entry,) = entries("chatpreference.add")
    assert entry.chat_id == -100555 and "time_zone=Europe/Moscow" in entry.detail


def test_a_chat_preferences_chat_id_cannot_be_changed(admin_client: Client) -> None:
    """The chat id is the row's key: a change form that took a new one wrote chat B's row
    (its zone replaced) and left chat A's as it was."""
    from telegram_bot.models import ChatPreference

    ChatPreference.objects.create(chat_id=-100561, time_zone="Europe/Moscow")
    ChatPreference.objects.create(chat_id=-100562, time_zone="Asia/Tokyo")
    admin_client.post(
        "/admin/telegram_bot/chatpreference/-100561/change/",
        {"chat_id": "-100562", "time_zone": "America/New_York", "language": ""},
    )
    zones = dict(ChatPreference.objects.values_list("chat_id", "time_zone"))
    assert zones == {-100561: "America/New_York", -100562: "Asia/Tokyo"}


def test_every_apps_entries_go_to_the_log_channel(
    bot: FakeTelegramServer, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.AUDIT_LOG_CHAT_ID = -100900
    monkeypatch.setattr(audit, "_log_chat_resolvers", [])  # this test's resolver only
    register_log_chat(lambda chat_id: -100901 if chat_id == -100555 else None)
    assert log_chats(None) == [-100900]
    assert log_chats(-100555) == [-100901, -100900]
    audit_record(action="post.publish", actor=Actor(None, "admin:ann"), source="admin")
    audit_record(
        action="join_request.approve", actor=Actor(7, "Ann"), source="button", chat_id=-100555
    )
    Job.objects.update(next_attempt=timezone.now())
    assert run_due("test-worker") == 3
    posted = sorted(
        (c.params["chat_id"], c.params["text"]) for c in bot.calls_to("sendMessage") if not c.failed
    )
    assert posted == [
        (-100901, "#join_request_approve in -100555 by Ann"),
        (-100900, "#join_request_approve in -100555 by Ann"),
        (-100900, "#post_publish by admin:ann"),
    ]
