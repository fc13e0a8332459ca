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
