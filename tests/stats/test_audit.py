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


def test_the_log_names_objects_in_english_for_a_russian_operator(admin_client: Client) -> None:
    """The stored entries read the same whatever the operator's language (like the rest of the
    log): the model's English name, not the Russian one the admin site shows."""
    one, two = (
        ViolationRule.objects.create(name=name, kind="banned_words", words="casino")
        for name in ("one", "two")
    )
    admin_client.post(
        f"/admin/stats/violationrule/{one.pk}/delete/", {"post": "yes"}, HTTP_ACCEPT_LANGUAGE="ru"
    )
    admin_client.post(
        "/admin/stats/violationrule/",
        {"action": "delete_selected", "_selected_action": [two.pk], "post": "yes"},
        HTTP_ACCEPT_LANGUAGE="ru",
    )
    single, bulk = AuditEntry.objects.order_by("id")
    assert single.target_name == f"violation rule #{one.pk}: one (medium)"
    assert bulk.target_name == f"violation rule #{two.pk} (1)"
