"""Channel posts' operator actions in the audit log: the admin site's saves, actions and
deletions, and the panel's buttons and conversations; failures with Telegram's reason; once
per update."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from content.models import Post, PostStatus
from telegram_bot.models import AuditEntry
from tests.builders import make_callback_update, make_message_update
from tests.conftest import OWNER_ID
from tests.content.conftest import make_post
from tests.content.test_admin import ADD, LIST, form
from tests.fakes.telegram import FakeTelegramServer

pytestmark = pytest.mark.django_db


def recorded() -> list[tuple[str, str, str, str]]:
    return [
        (e.action, e.source, e.target_name, e.outcome) for e in AuditEntry.objects.order_by("id")
    ]


def test_admin_site_post_actions_are_recorded(
    bot: FakeTelegramServer, admin_client: Client
) -> None:
    when = timezone.now() + timedelta(days=2)
    admin_client.post(ADD, form(publish_at=f"{when:%Y-%m-%dT%H:%M}"))
    scheduled = Post.objects.get()
    admin_client.post(LIST, {"action": "unschedule", "_selected_action": [scheduled.pk]})
    bot.fail_next("sendMessage", status=400, description="Bad Request: chat not found")
    admin_client.post(LIST, {"action": "publish_now", "_selected_action": [scheduled.pk]})
    draft = make_post("Draft")
    admin_client.post(f"{LIST}{draft.pk}/delete/", {"post": "yes"})
    s, d = f"post #{scheduled.pk}", f"post #{draft.pk}"
    assert recorded() == [
        ("post.create", "admin", s, "done"),
        ("post.unschedule", "admin", s, "done"),
        ("post.publish", "admin", s, "failed"),
        ("post.delete", "admin", d, "done"),
    ]
    failed = AuditEntry.objects.get(action="post.publish")
    assert failed.actor_name == "admin:admin" and "chat not found" in failed.detail
    assert Post.objects.get(pk=scheduled.pk).status == PostStatus.FAILED


def test_panel_post_actions_are_recorded_once(bot: FakeTelegramServer, post_update: Any) -> None:
    post = make_post("From the panel")
    publish = make_callback_update(f"content:pub:{post.pk}", user_id=OWNER_ID)
    post_update(publish)
    post_update(publish)  # a re-delivery
    post_update(make_callback_update(f"content:edit:{post.pk}", user_id=OWNER_ID))
    post_update(make_message_update("Edited", chat_id=OWNER_ID, user_id=OWNER_ID))
    assert recorded() == [
        ("post.publish", "panel", f"post #{post.pk}", "done"),
        ("post.edit", "panel", f"post #{post.pk}", "done"),
    ]
    assert {e.actor_id for e in AuditEntry.objects.all()} == {OWNER_ID}
    assert Post.objects.get(pk=post.pk).text == "Edited"
