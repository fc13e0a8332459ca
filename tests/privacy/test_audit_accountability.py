"""Erasure against accountability: what the audit log keeps of a moderator who erased
themselves (their actions under a stable pseudonym), and that an erasure changes only the
fields that hold the person, never a number that happens to appear in another entry's text."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from moderation.models import Warning
from telegram_bot import privacy
from telegram_bot.audit import Actor, audit_record
from telegram_bot.models import AuditEntry
from telegram_bot.pipeline.process import Outcome, process_update
from telegram_bot.privacy import erase_user, export_user, is_anonymous
from telegram_bot.state import KVStore
from tests.builders import make_callback_update, make_message_update
from tests.fakes.telegram import FakeTelegramServer
from tests.moderation.helpers import GROUP, MEMBER, MOD, command, describe_group, member_message

pytestmark = pytest.mark.django_db(transaction=True)
OPERATOR = Actor(None, "site:operator")


def forget_me(bot: FakeTelegramServer, user_id: int) -> None:
    """/forgetme in a private chat, then the Erase button."""
    private = make_message_update("/forgetme", chat_id=user_id, user_id=user_id)
    assert process_update(private) == Outcome.PROCESSED
    [[erase], _cancel] = bot.calls_to("sendMessage")[-1].params["reply_markup"]["inline_keyboard"]
    press = make_callback_update(erase["callback_data"], user_id=user_id)
    assert process_update(press) == Outcome.PROCESSED


def entries_by(action: str) -> list[AuditEntry]:
    return list(AuditEntry.objects.filter(action=action).order_by("id"))


def test_a_moderators_forgetme_keeps_their_actions_under_a_stable_pseudonym(
    store: KVStore, fake_telegram: FakeTelegramServer, admin_client: Client
) -> None:
    describe_group(fake_telegram)
    assert process_update(command("/warn spam", reply_to=member_message())) == Outcome.PROCESSED
    [warned] = entries_by("warn")
    assert (warned.actor_id, warned.actor_name, warned.target_id) == (MOD, "Test", MEMBER)

    forget_me(fake_telegram, MOD)

    pseudonym = privacy.pseudonym(MOD)
    warned.refresh_from_db()
    # Accountable: the entry still says which moderator warned whom; the name is gone.
    assert (warned.actor_id, warned.actor_name, warned.target_id) == (pseudonym, "", MEMBER)
    assert is_anonymous(pseudonym) and pseudonym != MOD
    # The warning row says the same moderator, not the erasure's anonymous member.
    assert Warning.objects.get().moderator_id == pseudonym

    # The moderator goes on moderating and erases themselves again: one pseudonym for all.
    process_update(command("/warn again", reply_to=member_message()))
    forget_me(fake_telegram, MOD)
    assert {entry.actor_id for entry in entries_by("warn")} == {pseudonym}
    assert set(Warning.objects.values_list("moderator_id", flat=True)) == {pseudonym}
    # Nothing holds the moderator's own id any more.
    assert not AuditEntry.objects.filter(actor_id=MOD).exists()
    assert not AuditEntry.objects.filter(target_id=MOD).exists()

    # An operator who knows the id finds the actions (the audit log's search), and so does
    # the person's export.
    page = admin_client.get("/admin/telegram_bot/auditentry/", {"q": str(MOD)})
    assert page.status_code == 200
    found = page.context["cl"].queryset
    assert {entry.pk for entry in found.filter(action="warn")} == {
        entry.pk for entry in entries_by("warn")
    }
    exported = export_user(MOD)["apps"]["telegram_bot"]["audit_log"]
    assert [entry["action"] for entry in exported] == ["warn", "warn"]
    assert all(entry["actor_id"] == pseudonym for entry in exported)


def test_the_pseudonym_is_not_the_erasures_anonymous_id(store: KVStore) -> None:
    audit_record(
        action="ban", actor=Actor(MOD, "Mo"), source="command", chat_id=GROUP, target_id=MEMBER
    )
    audit_record(
        action="warn", actor=Actor(7, "Olga"), source="command", chat_id=GROUP, target_id=MOD
    )
    erase_user(MOD, actor=OPERATOR, source="admin")
    acted = AuditEntry.objects.get(action="ban")
    about = AuditEntry.objects.get(action="warn")
    assert acted.actor_id == privacy.pseudonym(MOD)
    # What was done to them is about a member who is gone: the erasure's anonymous id, which
    # nothing links to the pseudonym (nor to the person).
    assert is_anonymous(about.target_id) and about.target_id != acted.actor_id
    assert about.actor_id == 7 and about.actor_name == "Olga"


@pytest.mark.parametrize("erased", [499, 2])
def test_a_number_in_another_entrys_text_is_not_erased(store: KVStore, erased: int) -> None:
    """The purge of 499 messages from message #2, by another moderator, about another member:
    erasing user 499 (or user 2) changes nothing in it."""
    texts = {
        "detail": "499 message(s) from #2",
        "reason": "flooded 499 times since message 2",
        "target_name": "member 2 of 499",
    }
    audit_record(
        action="purge",
        actor=Actor(7, "Olga"),
        source="command",
        chat_id=GROUP,
        target_id=5005,
        **texts,
    )
    audit_record(
        action="kick",
        actor=Actor(erased, "Erased"),
        source="command",
        chat_id=GROUP,
        target_id=5006,
        target_name="Eve",
        reason="spam",
    )
    erase_user(erased, actor=OPERATOR, source="admin")
    purge = AuditEntry.objects.get(action="purge")
    assert {name: getattr(purge, name) for name in texts} == texts
    assert (purge.actor_id, purge.actor_name, purge.target_id) == (7, "Olga", 5005)
    kick = AuditEntry.objects.get(action="kick")
    assert (kick.actor_id, kick.actor_name) == (privacy.pseudonym(erased), "")
    assert (kick.target_id, kick.target_name, kick.reason) == (5006, "Eve", "spam")


def test_an_entry_about_the_persons_private_chat_loses_its_words(
    store: KVStore, admin_client: Any
) -> None:
    """A private chat's id is its user's: the admin site's entry on their chat preference
    names it in its label and its changed fields, which go with the chat id."""
    admin_client.post(
        "/admin/telegram_bot/chatpreference/add/",
        {"chat_id": "499", "time_zone": "Europe/Moscow", "language": "ru"},
    )
    erase_user(499, actor=OPERATOR, source="admin")
    entry = AuditEntry.objects.get(action="chatpreference.add")
    assert is_anonymous(entry.chat_id) and entry.chat_id != privacy.pseudonym(499)
    assert "499" not in entry.target_name + entry.detail
    assert entry.actor_name.startswith("admin:")  # the operator's own name stays
