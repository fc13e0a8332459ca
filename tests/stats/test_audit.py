"""The statistics settings and violation rules edited in the admin site are in the audit log
(a rule decides what moderation does to a member's message)."""

from __future__ import annotations

import pytest
from django.test import Client

from stats.models import ViolationRule
from telegram_bot.models import AuditEntry

pytestmark = pytest.mark.django_db


def test_rule_edits_and_deletions_are_recorded(admin_client: Client) -> None:
    form = {"name": "spam", "kind": "banned_words", "words": "casino", "severity": "high"}
    assert admin_client.post("/admin/stats/violationrule/add/", form).status_code == 302
    rule = ViolationRule.objects.get(name="spam")
    admin_client.post(f"/admin/stats/violationrule/{rule.pk}/delete/", {"post": "yes"})
    added, deleted = AuditEntry.objects.order_by("id")
    assert (added.action, added.actor_name, added.outcome) == (
        "violationrule.add",
        "admin:admin",
        "done",
    )
    assert "words=casino" in added.detail and "severity=high" in added.detail
    assert deleted.action == "violationrule.delete"
    assert deleted.target_name == f"violation rule #{rule.pk}: {rule}"
