"""The staff group: a forum topic per ticket, through the webhook against the fake Bot API."""

from __future__ import annotations

import re
from typing import Any

from support.models import Ticket, TicketMessage
from telegram_bot.models import AuditEntry
from tests.builders import make_message_update
from tests.conftest import OWNER_ID
from tests.fakes.telegram import FakeTelegramServer
from tests.support.helpers import USER, message, sent, texts
from tests.support.staff_helpers import (
    AGENT,
    STAFF,
    in_topic,
    open_ticket,
    staff_bot,
    topic_calls,
    topic_of,
    user_texts,
)

__all__ = ["staff_bot"]


def test_a_ticket_gets_its_own_topic_with_the_users_message(
    staff_bot: FakeTelegramServer, post_update: Any
) -> None:
    ticket = open_ticket(post_update)
    ticket.refresh_from_db()
    assert ticket.topic_chat_id == STAFF and ticket.topic_id is not None
    [created] = sent(staff_bot, "createForumTopic")
    assert created.params["name"] == "#1 · Test · my order never arrived"
    # "/support <text>": the text, without the command; then the user's messages as they are.
    lines = [c.params["text"] for c in topic_calls(staff_bot, "sendMessage", ticket.topic_id)]
    assert lines[0].startswith("Ticket #1 from Test (id 2001).")
    assert lines[1] == "my order never arrived"
    assert user_texts(staff_bot)[0].startswith("Ticket #1 opened.")
    assert not texts(staff_bot, OWNER_ID)  # no private notice: the group has it
    # A follow-up goes to the same topic, once, copied.
    post_update(message("any news?"))
    [copy] = topic_calls(staff_bot, "copyMessage", ticket.topic_id)
    follow_up = ticket.messages.get(text="any news?")
    assert (copy.params["from_chat_id"], copy.params["message_id"]) == (
        USER,
        follow_up.source_message_id,
    )
    assert len(sent(staff_bot, "createForumTopic")) == 1


def test_a_request_sent_after_support_is_copied_as_it_is(
    staff_bot: FakeTelegramServer, post_update: Any
) -> None:
    post_update(message("/support"))
    photo = [{"file_id": "ph-1", "file_unique_id": "p1", "width": 9, "height": 9}]
    post_update(message(None, photo=photo, caption="broken"))
    ticket = Ticket.objects.get()
    [copy] = topic_calls(staff_bot, "copyMessage", int(ticket.topic_id or 0))
    assert copy.params["message_id"] == ticket.messages.get().source_message_id


def test_the_topic_name_stays_within_telegrams_limit(
    staff_bot: FakeTelegramServer, post_update: Any
) -> None:
    open_ticket(post_update, "/support " + "very long words " * 40)
    [created] = sent(staff_bot, "createForumTopic")
    assert len(created.params["name"]) == 128 and created.params["name"].endswith("…")


def test_staff_answer_in_the_topic_and_notes_stay_internal(
    staff_bot: FakeTelegramServer, post_update: Any
) -> None:
    ticket = open_ticket(post_update)
    topic = int(Ticket.objects.get().topic_id or 0)
    assert post_update(in_topic("It ships tomorrow.", topic))["X-Update-Outcome"] == "processed"
    assert user_texts(staff_bot)[-1] == "Support · ticket #1\n\nIt ships tomorrow."
    post_update(in_topic("!customer is angry, be nice", topic))
    post_update(in_topic("/somethingelse", topic))
    assert user_texts(staff_bot)[-1] == "Support · ticket #1\n\nIt ships tomorrow."
    note = ticket.messages.get(internal=True)
    assert (note.text, note.sender) == ("customer is angry, be nice", "admin")
    ticket.refresh_from_db()
    assert ticket.first_response_at is not None and ticket.waiting_since is None
    # Nothing of the staff's own messages is echoed back into the topic.
    assert not topic_calls(staff_bot, "copyMessage", topic)
    lines = [c.params["text"] for c in topic_calls(staff_bot, "sendMessage", topic)]
    assert not any("ships tomorrow" in line or "angry" in line for line in lines)


def test_a_redelivered_staff_answer_is_sent_once(
    staff_bot: FakeTelegramServer, post_update: Any
) -> None:
    open_ticket(post_update)
    topic = int(Ticket.objects.get().topic_id or 0)
    answer = in_topic("Refund issued.", topic)
    post_update(answer)
    post_update(answer)
    assert user_texts(staff_bot).count("Support · ticket #1\n\nRefund issued.") == 1


def test_close_and_reopen_in_the_topic_close_and_reopen_it(
    staff_bot: FakeTelegramServer, post_update: Any
) -> None:
    ticket = open_ticket(post_update)
    topic = int(Ticket.objects.get().topic_id or 0)
    post_update(in_topic("/close", topic))
    ticket.refresh_from_db()
    assert ticket.status == "closed"
    assert topic_of(staff_bot, topic)["closed"] is True
    assert topic_of(staff_bot, topic)["name"].startswith("✅ #1")
    assert "resolved by support" in user_texts(staff_bot)[-1]
    [notice] = [c for c in sent(staff_bot, "sendMessage", USER) if "resolved" in c.params["text"]]
    buttons = notice.params["reply_markup"]["inline_keyboard"][0]
    assert [b["callback_data"] for b in buttons] == [
        f"sup:rate:{ticket.pk}:good",
        f"sup:rate:{ticket.pk}:bad",
    ]
    post_update(in_topic("/reopen", topic))
    ticket.refresh_from_db()
    assert ticket.status == "open" and topic_of(staff_bot, topic)["closed"] is False
    assert topic_of(staff_bot, topic)["name"].startswith("#1")
    assert "Support reopened ticket #1" in user_texts(staff_bot)[-1]


def test_a_user_closing_the_ticket_closes_the_topic(
    staff_bot: FakeTelegramServer, post_update: Any
) -> None:
    open_ticket(post_update)
    topic = int(Ticket.objects.get().topic_id or 0)
    post_update(message("/close"))
    assert topic_of(staff_bot, topic)["closed"] is True
    lines = [c.params["text"] for c in topic_calls(staff_bot, "sendMessage", topic)]
    assert "Closed by the user." in lines
    # Replying to the closing notice reopens ticket and topic.
    post_update(message("/support another question"))
    assert Ticket.objects.count() == 2


def test_assign_unassign_and_priority_in_the_topic(
    staff_bot: FakeTelegramServer, post_update: Any
) -> None:
    ticket = open_ticket(post_update)
    topic = int(Ticket.objects.get().topic_id or 0)
    post_update(in_topic("/assign @maria_support", topic))
    ticket.refresh_from_db()
    assert ticket.assignee == "@maria_support"
    replies = [c.params["text"] for c in topic_calls(staff_bot, "sendMessage", topic)]
    assert "Ticket #1 is assigned to @maria_support." in replies
    post_update(in_topic("/assign me", topic))
    ticket.refresh_from_db()
    assert ticket.assignee == f"tg:{AGENT}"
    post_update(in_topic("/unassign", topic))
    ticket.refresh_from_db()
    assert ticket.assignee == ""
    post_update(in_topic("/priority high", topic))
    ticket.refresh_from_db()
    assert ticket.priority == "high"
    assert topic_of(staff_bot, topic)["name"].startswith("🔥 #1")
    audited = AuditEntry.objects.filter(actor_id=AGENT).order_by("pk")
    assert list(audited.values_list("action", "detail")) == [
        ("ticket.assign", "@maria_support"),
        ("ticket.assign", f"tg:{AGENT}"),
        ("ticket.assign", "unassigned"),
        ("ticket.priority", "high"),
    ]


def test_bad_command_arguments_are_refused_with_usage(
    staff_bot: FakeTelegramServer, post_update: Any
) -> None:
    ticket = open_ticket(post_update)
    topic = int(Ticket.objects.get().topic_id or 0)
    post_update(in_topic("/priority urgent!!", topic))
    post_update(in_topic("/assign not a name", topic))
    replies = [c.params["text"] for c in topic_calls(staff_bot, "sendMessage", topic)]
    assert "Usage: /priority low, /priority normal or /priority high." in replies
    assert any(r.startswith("Usage: /assign @username") for r in replies)
    ticket.refresh_from_db()
    assert (ticket.priority, ticket.assignee) == ("normal", "")


def test_messages_outside_ticket_topics_are_ignored(
    staff_bot: FakeTelegramServer, post_update: Any
) -> None:
    open_ticket(post_update)
    general = make_message_update(
        "hello team", chat_id=STAFF, user_id=AGENT, chat_type="supergroup"
    )
    assert post_update(general)["X-Update-Outcome"] == "processed"
    with staff_bot.lock:  # a topic staff opened by hand
        staff_bot.results.topics[STAFF][999] = {"name": "chat", "icon_color": 0, "closed": False}
    post_update(in_topic("/close", 999))
    assert Ticket.objects.get().status == "open"
    assert len(user_texts(staff_bot)) == 1  # the confirmation only
    [refusal] = [c for c in topic_calls(staff_bot, "sendMessage", 999)]
    assert refusal.params["text"] == "This topic is not a support ticket."


def test_without_a_staff_group_the_private_flow_stays(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    open_ticket(post_update)
    assert not sent(bot, "createForumTopic")
    assert texts(bot, OWNER_ID)[0].startswith("New ticket #1")
    assert Ticket.objects.get().topic_id is None


def test_a_user_can_open_another_ticket_with_new(
    staff_bot: FakeTelegramServer, post_update: Any
) -> None:
    open_ticket(post_update)
    post_update(message("/new a second problem"))
    assert list(Ticket.objects.order_by("number").values_list("number", "status")) == [
        (1, "open"),
        (2, "open"),
    ]
    assert user_texts(staff_bot)[-1].startswith("Ticket #2 opened.")
    assert len(sent(staff_bot, "createForumTopic")) == 2


def test_answers_are_recorded_with_the_entry_kind(
    staff_bot: FakeTelegramServer, post_update: Any
) -> None:
    ticket = open_ticket(post_update)
    topic = int(Ticket.objects.get().topic_id or 0)
    photo = [{"file_id": "ph-9", "file_unique_id": "p9", "width": 9, "height": 9}]
    post_update(in_topic(None, topic, photo=photo, caption="see this"))
    entry = ticket.messages.get(sender=TicketMessage.Sender.ADMIN)
    assert (entry.kind, entry.file_id, entry.text) == ("photo", "ph-9", "see this")
    [copy] = sent(staff_bot, "copyMessage", USER)
    assert copy.params["from_chat_id"] == STAFF
    assert copy.params["caption"] == "Support · ticket #1\n\nsee this"


def test_answers_from_the_web_are_echoed_in_the_topic(
    staff_bot: FakeTelegramServer, post_update: Any, admin_client: Any
) -> None:
    ticket = open_ticket(post_update)
    topic = int(Ticket.objects.get().topic_id or 0)
    form = {"form_token": "6f1c2b1e-8a51-4f0e-9a55-2d7c1b9b2a10", "text": "Sent from the site."}
    admin_client.post(f"/admin/support/ticket/{ticket.pk}/reply/", form)
    assert user_texts(staff_bot)[-1] == "Support · ticket #1\n\nSent from the site."
    lines = [c.params["text"] for c in topic_calls(staff_bot, "sendMessage", topic)]
    assert lines[-1].endswith("answered from the web:\nSent from the site.")
    admin_client.post(
        f"/admin/support/ticket/{ticket.pk}/resolve/",
        {"form_token": "6f1c2b1e-8a51-4f0e-9a55-2d7c1b9b2a11"},
    )
    assert topic_of(staff_bot, topic)["closed"] is True


def test_the_ticket_list_names_the_assignee_given_by_assign(
    staff_bot: FakeTelegramServer, post_update: Any, admin_client: Any
) -> None:
    open_ticket(post_update)
    topic = int(Ticket.objects.get().topic_id or 0)
    post_update(in_topic("First answer from Test.", topic))
    post_update(in_topic("/assign @maria_support", topic))
    page = admin_client.get("/admin/support/ticket/").content.decode()
    # unfold's list cell carries more classes and its column's label (for the phone layout).
    found = re.search(r'<td class="field-assignee_display[^>]*>([^<]*)</td>', page)
    assert found is not None and found.group(1).strip() == "@maria_support"


def test_an_anonymous_admins_message_is_not_forwarded_and_they_are_told(
    staff_bot: FakeTelegramServer, post_update: Any
) -> None:
    open_ticket(post_update)
    topic = int(Ticket.objects.get().topic_id or 0)
    update = in_topic("hidden answer", topic, sender_chat={"id": STAFF, "type": "supergroup"})
    update["message"]["from"] = {"id": 1087968824, "is_bot": True, "first_name": "Group"}
    assert post_update(update)["X-Update-Outcome"] == "processed"
    assert len(user_texts(staff_bot)) == 1  # the confirmation only
    lines = [c.params["text"] for c in topic_calls(staff_bot, "sendMessage", topic)]
    assert lines[-1].startswith("Sent anonymously, so it was not forwarded to the user")
