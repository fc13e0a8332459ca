"""Poll posts: sent with sendPoll once, refused in the form outside Telegram's limits (11
options, an empty question, a text beside it), never edited once published."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from content.errors import PostStateError
from content.models import Post, PostStatus
from content.publishing import post_publish_now
from content.services import PostChanges, post_update
from tests.content.test_admin import ADD, errors_of, form
from tests.fakes.telegram import FakeTelegramServer

pytestmark = pytest.mark.django_db


def poll_form(**fields: Any) -> dict[str, Any]:
    data = {"text": "", "poll_question": "Lunch?", "poll_options": "Pizza\nSoup\n"}
    data.update(fields)
    return form(**data)


def test_a_poll_post_is_published_once_with_sendpoll(
    bot: FakeTelegramServer, admin_client: Client
) -> None:
    response = admin_client.post(ADD, poll_form(silent="on"))
    assert response.status_code == 302, errors_of(response)
    post = Post.objects.get()
    assert (post.poll_question, post.poll_options) == ("Lunch?", ["Pizza", "Soup"])
    assert post.summary == "Lunch?"
    post = post_publish_now(post_id=post.pk)
    assert post.status == PostStatus.PUBLISHED and post.channel_message_id
    [sent] = [c for c in bot.calls_to("sendPoll") if not c.failed]
    assert sent.params["question"] == "Lunch?" and sent.params["disable_notification"] is True
    assert [o["text"] for o in sent.params["options"]] == ["Pizza", "Soup"]
    assert not bot.calls_to("sendMessage")
    with pytest.raises(PostStateError, match="poll"):
        post_update(post_id=post.pk, changes=PostChanges(text="edited"))


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"poll_options": "\n".join(f"option {n}" for n in range(11))}, "2 to 10 options"),
        ({"poll_options": "Only one"}, "this one has 1"),
        ({"poll_question": ""}, "needs a question"),
        ({"poll_question": "?" * 301}, "at most 300"),
        ({"poll_options": "Same\nSame"}, "must be different"),
        ({"poll_options": "x" * 101 + "\nb"}, "at most 100"),
        ({"text": "And a text"}, "sent alone"),
    ],
)
def test_a_bad_poll_is_refused_in_the_form_and_nothing_is_saved(
    bot: FakeTelegramServer, admin_client: Client, fields: dict[str, Any], problem: str
) -> None:
    response = admin_client.post(ADD, poll_form(**fields))
    assert response.status_code == 200
    assert problem in errors_of(response)
    assert not Post.objects.exists()
    assert not bot.calls


def quiz_form(**fields: Any) -> dict[str, Any]:
    data = {
        "poll_type": "quiz",
        "poll_options": "Pizza\n*Soup\nSalad",
        "poll_explanation": "Soup, on Mondays.",
    }
    return poll_form(**{**data, **fields})


def test_a_quiz_is_published_once_with_its_correct_option_and_explanation(
    bot: FakeTelegramServer, admin_client: Client
) -> None:
    response = admin_client.post(ADD, quiz_form())
    assert response.status_code == 302, errors_of(response)
    post = Post.objects.get()
    assert post.poll_options == ["Pizza", "Soup", "Salad"]
    assert (post.poll_type, post.poll_correct_option) == ("quiz", 1)
    page = admin_client.get(f"/admin/content/post/{post.pk}/change/").content.decode()
    assert "*Soup" in page  # the form shows the mark it was given
    post = post_publish_now(post_id=post.pk)
    assert post.status == PostStatus.PUBLISHED
    [sent] = [c for c in bot.calls_to("sendPoll") if not c.failed]
    assert sent.params["type"] == "quiz" and sent.params["correct_option_ids"] == [1]
    assert sent.params["explanation"] == "Soup, on Mondays."
    message = bot.message(sent.params["chat_id"], post.channel_message_id)
    assert message is not None and message["poll"]["correct_option_ids"] == [1]
    with pytest.raises(PostStateError):
        post_publish_now(post_id=post.pk)
    assert len(bot.calls_to("sendPoll")) == 1


def test_moving_the_mark_changes_the_correct_option(admin_client: Client) -> None:
    admin_client.post(ADD, quiz_form())
    post = Post.objects.get()
    response = admin_client.post(
        f"/admin/content/post/{post.pk}/change/",
        quiz_form(poll_options="*Pizza\nSoup\nSalad"),
    )
    assert response.status_code == 302, errors_of(response)
    post.refresh_from_db()
    assert (post.poll_options, post.poll_correct_option) == (["Pizza", "Soup", "Salad"], 0)
    response = admin_client.post(
        f"/admin/content/post/{post.pk}/change/",
        poll_form(poll_type="regular", poll_options="Pizza\nSoup"),
    )
    assert response.status_code == 302, errors_of(response)
    post.refresh_from_db()
    assert (post.poll_type, post.poll_correct_option) == ("regular", None)


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"poll_options": "Pizza\nSoup"}, "exactly one correct option"),
        ({"poll_options": "*Pizza\n*Soup"}, "exactly one correct option"),
        ({"poll_explanation": "x" * 201}, "at most 200"),
        ({"poll_explanation": "a\nb\nc\nd"}, "at most 2 line breaks"),
    ],
)
def test_a_bad_quiz_is_refused_in_the_form_and_nothing_is_saved(
    bot: FakeTelegramServer, admin_client: Client, fields: dict[str, Any], problem: str
) -> None:
    response = admin_client.post(ADD, quiz_form(**fields))
    assert response.status_code == 200
    assert problem in errors_of(response)
    assert not Post.objects.exists()
    assert not bot.calls


def test_an_explanation_needs_a_quiz(admin_client: Client) -> None:
    response = admin_client.post(ADD, poll_form(poll_explanation="Why"))
    assert response.status_code == 200
    assert "Only a quiz has an explanation" in errors_of(response)
    response = admin_client.post(ADD, form(poll_type="quiz"))
    assert "A quiz needs a question and options" in errors_of(response)
    assert not Post.objects.exists()


def test_the_fake_refuses_a_quiz_without_a_correct_option(bot: FakeTelegramServer) -> None:
    from telegram_bot.bot import get_client
    from telegram_bot.errors import TelegramApiError

    with pytest.raises(TelegramApiError, match="QUIZ_CORRECT_ANSWERS_EMPTY"):
        get_client().send_poll(
            chat_id="@news_channel", question="Q", options=["a", "b"], type="quiz"
        )
