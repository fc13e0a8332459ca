"""The operators' web side: bad object ids in admin links, the
stats API's cache headers, deletions that left no audit entry. Each test failed before."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from moderation.models import ChatSettings
from support.models import Ticket
from telegram_bot.models import AuditEntry
from tests.builders import make_message_update
from tests.support.helpers import open_ticket

pytestmark = pytest.mark.django_db

GROUP = -100777


@pytest.mark.parametrize(
    "url",
    [
        "/admin/stats/backfillstate/%00/change/",
        "/admin/stats/backfillstate/%00/history/",
        "/admin/django_q/success/%00/change/",
        "/admin/django_q/failure/%00/delete/",
    ],
)
def test_a_nul_in_an_object_id_is_a_bad_link_not_a_500(admin_client: Client, url: str) -> None:
    """Text primary keys (the backfill's job name, django-q2's task id): PostgreSQL refuses a
    NUL in the lookup (DataError), which ``_lookups_checked`` handles for list filters only."""
    admin_client.raise_request_exception = False
    response = admin_client.get(url)
    assert response.status_code < 500, (url, response.status_code)


def test_the_stats_api_answers_with_personal_data_are_not_cacheable(
    bot: Any, post_update: Any, admin_client: Client
) -> None:
    """The dashboard page and its CSV export carry ``Cache-Control: no-store, private`` (the
    admin site's never_cache); the JSON of the same members (names, usernames, last seen) that
    the dashboard reads from /api/v1/stats/ carries no Cache-Control at all."""
    update = make_message_update(
        "hello there", chat_id=GROUP, user_id=7, chat_type="supergroup", date=int(time.time())
    )
    update["message"]["from"]["first_name"] = "Private Person"
    assert post_update(update)["X-Update-Outcome"] == "processed"
    today = timezone.now().date().isoformat()
    query = {"chat_id": GROUP, "start": today, "end": today}
    csv = admin_client.get("/admin/stats/export.csv", query)
    assert "no-store" in csv["Cache-Control"]  # the export: not cached
    for path in ("members", "report"):
        response = admin_client.get(f"/api/v1/stats/{path}", query)
        assert response.status_code == 200
        assert "Private Person" in response.content.decode()
        assert "no-store" in response.get("Cache-Control", ""), (
            path,
            response.get("Cache-Control"),
        )
    # The refusals too: the decorator wraps ninja's whole view, authentication included.
    refused = Client().get("/api/v1/stats/members", query)
    assert refused.status_code == 401
    assert "no-store" in refused.get("Cache-Control", "")


def test_deleting_a_chats_moderation_settings_in_the_admin_site_is_audited(
    admin_client: Client,
) -> None:
    """Saving them is recorded (``moderation.services.audit_settings``); deleting the row puts
    the chat back on the defaults (warn limit, anti-flood, violation actions, log channel) and
    leaves no trace in the audit log."""
    row = ChatSettings.objects.create(chat_id=GROUP, title="Group", warn_limit=5)
    response = admin_client.post(
        f"/admin/moderation/chatsettings/{row.pk}/delete/", {"post": "yes"}
    )
    assert response.status_code == 302
    assert not ChatSettings.objects.filter(pk=row.pk).exists()
    actions = list(AuditEntry.objects.values_list("action", "chat_id"))
    assert any("delete" in action and chat == GROUP for action, chat in actions), actions


def test_deleting_a_ticket_in_the_admin_site_is_audited(admin_client: Client) -> None:
    """A ticket and its conversation deleted by an operator: the retention purge and an erasure
    are recorded, this is not."""
    ticket, _ = open_ticket(text="help me", user_id=2001)
    before = AuditEntry.objects.count()
    response = admin_client.post(f"/admin/support/ticket/{ticket.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not Ticket.objects.filter(pk=ticket.pk).exists()
    new = list(AuditEntry.objects.order_by("id")[before:].values_list("action", flat=True))
    assert any("delete" in action for action in new), new


def test_deleting_a_blocked_chat_or_a_delivery_failure_is_audited(admin_client: Client) -> None:
    """Removing a blocked chat lets deliveries to it start again: an operator's act."""
    from telegram_bot.models import BlockedChat, DeliveryFailure

    blocked = BlockedChat.objects.create(chat_id=4242)
    failure = DeliveryFailure.objects.create(
        chat_id=4242, purpose="x", error_class="E", description="y"
    )
    for url in (
        f"/admin/telegram_bot/blockedchat/{blocked.pk}/delete/",
        f"/admin/telegram_bot/deliveryfailure/{failure.pk}/delete/",
    ):
        assert admin_client.post(url, {"post": "yes"}).status_code == 302
    actions = sorted(AuditEntry.objects.values_list("action", flat=True))
    assert actions == ["blockedchat.delete", "deliveryfailure.delete"]


def test_a_bot_admins_new_name_and_a_deleted_job_are_audited(admin_client: Client) -> None:
    """A queued job may be a ban waiting out Telegram's rate limit: deleting it is an act."""
    from telegram_bot.jobs.models import Job
    from telegram_bot.models import BotAdmin

    row = BotAdmin.objects.create(telegram_id=4242, display_name="Ann")
    url = f"/admin/telegram_bot/botadmin/{row.pk}/change/"
    assert admin_client.post(url, {"display_name": "Ann B."}).status_code == 302
    job = Job.objects.create(kind="moderation.act", payload={"user_id": 1})
    url = f"/admin/telegram_bot/job/{job.pk}/delete/"
    assert admin_client.post(url, {"post": "yes"}).status_code == 302
    entries = AuditEntry.objects.values_list("action", "target_id", "detail")
    assert sorted(entries) == [("admin.change", 4242, "display_name"), ("job.delete", None, "")]
