"""The user's side: the rating after closing, canned replies, attachments both ways."""

from __future__ import annotations

from typing import Any

from support.models import CannedReply, Ticket
from tests.fakes.telegram import FakeTelegramServer
from tests.support.helpers import USER, button, message, sent
from tests.support.staff_helpers import in_topic, open_ticket, staff_bot, topic_calls, user_texts

__all__ = ["staff_bot"]


def test_the_user_rates_a_closed_ticket_once(
    staff_bot: FakeTelegramServer, post_update: Any
) -> None:
    ticket = open_ticket(post_update)
    topic = int(Ticket.objects.get().topic_id or 0)
    # Not before it is closed.
    post_update(button(f"sup:rate:{ticket.pk}:good", user_id=USER))
    assert sent(staff_bot, "answerCallbackQuery")[-1].params["text"] == (
        "You can rate a ticket once it is closed."
    )
    post_update(in_topic("/close", topic))
    post_update(button(f"sup:rate:{ticket.pk}:bad", user_id=USER))
    ticket.refresh_from_db()
    assert ticket.rating == "bad" and ticket.rated_at is not None
    assert sent(staff_bot, "answerCallbackQuery")[-1].params["text"] == (
        "Thank you for your feedback!"
    )
    lines = [c.params["text"] for c in topic_calls(staff_bot, "sendMessage", topic)]
    assert "The user rated ticket #1: bad." in lines
    # A second press changes nothing; someone else's press is refused.
    post_update(button(f"sup:rate:{ticket.pk}:good", user_id=USER))
    post_update(button(f"sup:rate:{ticket.pk}:good", user_id=USER + 1))
    ticket.refresh_from_db()
    assert ticket.rating == "bad"
    assert sent(staff_bot, "answerCallbackQuery")[-1].params["text"] == "You have no such ticket."


def test_forged_rating_buttons_are_refused(staff_bot: FakeTelegramServer, post_update: Any) -> None:
    ticket = open_ticket(post_update)
    for data in (f"sup:rate:{ticket.pk}:meh", "sup:rate:x:good", f"sup:rate:{ticket.pk}"):
        post_update(button(data, user_id=USER))
        assert sent(staff_bot, "answerCallbackQuery")[-1].params["text"] == (
            "This button is not valid."
        )
    ticket.refresh_from_db()
    assert ticket.rating == ""


def test_canned_reply_fills_its_placeholders(
    staff_bot: FakeTelegramServer, post_update: Any
) -> None:
    CannedReply.objects.create(
        name="shipping", text="Hi {first_name}, ticket {ticket}: it ships in 2 days. {other}"
    )
    open_ticket(post_update)
    topic = int(Ticket.objects.get().topic_id or 0)
    canned = in_topic("/canned shipping", topic)
    post_update(canned)
    post_update(canned)  # re-delivered: sent once
    expected = "Support · ticket #1\n\nHi Test, ticket #1: it ships in 2 days. {other}"
    assert user_texts(staff_bot).count(expected) == 1
    post_update(in_topic("/canned nosuch", topic))
    lines = [c.params["text"] for c in topic_calls(staff_bot, "sendMessage", topic)]
    assert "Usage: /canned <name>. Saved answers: shipping." in lines


def test_user_attachments_are_copied_and_recorded_with_their_kind(
    staff_bot: FakeTelegramServer, post_update: Any
) -> None:
    ticket = open_ticket(post_update)
    topic = int(Ticket.objects.get().topic_id or 0)
    video = {"file_id": "vid-1", "file_unique_id": "v1", "width": 9, "height": 9, "duration": 3}
    sticker = {
        "file_id": "st-1",
        "file_unique_id": "s1",
        "type": "regular",
        "width": 1,
        "height": 1,
        "is_animated": False,
        "is_video": False,
    }
    photo = [{"file_id": "ph-1", "file_unique_id": "p1", "width": 9, "height": 9}]
    post_update(message(None, video=video, caption="the box"))
    post_update(message(None, sticker=sticker))
    post_update(message(None, photo=photo, media_group_id="alb-1"))
    post_update(message(None, photo=photo, media_group_id="alb-1"))
    kinds = list(ticket.messages.order_by("pk").values_list("kind", "file_id", "media_group_id"))
    assert kinds[1:] == [
        ("video", "vid-1", ""),
        ("sticker", "st-1", ""),
        ("photo", "ph-1", "alb-1"),
        ("photo", "ph-1", "alb-1"),
    ]
    assert len(topic_calls(staff_bot, "copyMessage", topic)) == 4  # each file, once
    assert not sent(staff_bot, "sendVideo") and not sent(staff_bot, "sendPhoto")


def test_a_file_over_the_download_limit_is_taken_and_the_user_told(
    staff_bot: FakeTelegramServer, post_update: Any
) -> None:
    open_ticket(post_update)
    big = {
        "file_id": "doc-big",
        "file_unique_id": "d",
        "file_name": "logs.zip",
        "file_size": 30 * 1024 * 1024,
    }
    assert post_update(message(None, document=big))["X-Update-Outcome"] == "processed"
    assert "over 20 MB" in user_texts(staff_bot)[-1]
    entry = Ticket.objects.get().messages.get(kind="document")
    assert entry.file_size == 30 * 1024 * 1024


def test_a_saved_answer_is_chosen_and_sent_from_the_web(
    bot: FakeTelegramServer, post_update: Any, admin_client: Any
) -> None:
    CannedReply.objects.create(name="thanks", text="Thank you, {first_name}! ({ticket})")
    ticket = open_ticket(post_update)
    page = admin_client.get(f"/admin/support/ticket/{ticket.pk}/change/").content.decode()
    assert "Thank you, Test! (#1)" in page
    start = page.index('class="canned-reply"')
    token = page[page.index('name="form_token" value="', start) + 25 :][:36]
    form = {"form_token": token, "text": "Thank you, Test! (#1)", "canned": "thanks"}
    response = admin_client.post(f"/admin/support/ticket/{ticket.pk}/reply/", form)
    assert response.status_code == 302
    assert user_texts(bot)[-1] == "Support · ticket #1\n\nThank you, Test! (#1)"
    admin_client.post(f"/admin/support/ticket/{ticket.pk}/reply/", form)  # sent twice: once
    assert user_texts(bot).count("Support · ticket #1\n\nThank you, Test! (#1)") == 1


def test_the_console_lists_tickets_by_state_assignee_and_waiting_time(
    bot: FakeTelegramServer, post_update: Any, admin_client: Any
) -> None:
    from datetime import timedelta

    from django.utils import timezone

    first = open_ticket(post_update, "/support first")
    second = open_ticket(post_update, "/support second")
    Ticket.objects.filter(pk=first.pk).update(
        waiting_since=timezone.now() - timedelta(hours=3), assignee="@maria_support"
    )
    Ticket.objects.filter(pk=second.pk).update(waiting_since=timezone.now(), priority="high")
    page = admin_client.get("/admin/support/ticket/?waiting=hour").content.decode()
    assert "first" in page and ">second<" not in page
    assert "3h" in page  # the waiting column
    page = admin_client.get("/admin/support/ticket/?priority__exact=high").content.decode()
    assert "second" in page and ">first<" not in page
    page = admin_client.get("/admin/support/ticket/?assignee=%40maria_support").content.decode()
    assert "first" in page and ">second<" not in page
    page = admin_client.get("/admin/support/ticket/?waiting=bogus").content.decode()
    assert "first" in page and "second" in page  # an unknown band filters nothing
