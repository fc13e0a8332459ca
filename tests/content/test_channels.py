"""A post to several channels: its own and a copy in each other channel, each published once
with its own outcome, also when the post's publication is retried or re-delivered."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from content.models import Post, PostStatus
from content.publishing import post_publish
from content.services import PostContent, post_create
from telegram_bot.jobs.models import Job, JobStatus
from telegram_bot.jobs.runner import run_due
from tests.content.conftest import CHANNEL, make_due
from tests.content.test_admin import ADD, errors_of, form
from tests.fakes.telegram import FakeTelegramServer

pytestmark = pytest.mark.django_db
OTHERS = ["@second_channel", "-1001234567890"]


def due_post(**fields: Any) -> Post:
    post = post_create(
        content=PostContent(channel=CHANNEL, text="Everywhere", also_to=OTHERS, **fields),
        created_by="test",
        publish_at=timezone.now() + timedelta(minutes=5),
    )
    make_due(post)
    return post


def sends(bot: FakeTelegramServer) -> dict[Any, int]:
    counts: dict[Any, int] = {}
    for call in bot.calls_to("sendMessage"):
        if not call.failed:
            counts[call.params["chat_id"]] = counts.get(call.params["chat_id"], 0) + 1
    return counts


def run_all() -> None:
    while run_due("w1"):
        pass


def test_each_channel_is_published_once(bot: FakeTelegramServer) -> None:
    post = due_post(silent=True)
    run_all()
    assert sends(bot) == {CHANNEL: 1, "@second_channel": 1, -1001234567890: 1}
    copies = {copy.channel: copy for copy in Post.objects.filter(copy_of=post)}
    assert set(copies) == set(OTHERS)
    assert all(c.status == PostStatus.PUBLISHED and c.channel_message_id for c in copies.values())
    assert all(c.silent and c.text == "Everywhere" for c in copies.values())
    post_publish(post_id=post.pk)  # re-delivered: nothing more
    run_all()
    assert Post.objects.filter(copy_of=post).count() == 2
    assert sends(bot) == {CHANNEL: 1, "@second_channel": 1, -1001234567890: 1}


def test_a_retried_publication_makes_no_second_copy(bot: FakeTelegramServer, settings: Any) -> None:
    settings.JOB_RETRY_BASE_DELAY = 0.01
    settings.JOB_RETRY_JITTER = 0.0
    post = due_post()
    bot.fail_next("sendMessage", status=500)  # the post's own first send
    assert run_due("w1", limit=1) == 1
    post.refresh_from_db()
    assert post.status == PostStatus.SCHEDULED
    Job.objects.filter(status=JobStatus.QUEUED).update(next_attempt=timezone.now())
    run_all()
    assert Post.objects.filter(copy_of=post).count() == 2
    assert sends(bot) == {CHANNEL: 1, "@second_channel": 1, -1001234567890: 1}


def test_a_refused_channel_fails_alone_and_the_page_shows_each_outcome(
    bot: FakeTelegramServer, admin_client: Client
) -> None:
    bot.block_chat("@second_channel", "Forbidden: bot is not a member of the channel chat")
    post = due_post()
    run_all()
    copies = {copy.channel: copy for copy in Post.objects.filter(copy_of=post)}
    assert copies["@second_channel"].status == PostStatus.FAILED
    assert copies["-1001234567890"].status == PostStatus.PUBLISHED
    post.refresh_from_db()
    assert post.status == PostStatus.PUBLISHED
    page = admin_client.get(f"/admin/content/post/{post.pk}/change/").content.decode()
    assert f"#{copies['@second_channel'].pk}" in page and "failed" in page
    message = copies["-1001234567890"].channel_message_id
    assert f"message {message}" in page


@pytest.mark.parametrize(
    ("also_to", "problem"),
    [
        ("news", "is not a channel"),
        (f"@second_channel\n{CHANNEL}", "named twice"),
        ("@second_channel\n@SECOND_channel", "named twice"),
        ("\n".join(f"@channel_{n:02d}" for n in range(11)), "At most 10"),
    ],
)
def test_bad_other_channels_are_refused_in_the_form(
    bot: FakeTelegramServer, admin_client: Client, also_to: str, problem: str
) -> None:
    response = admin_client.post(ADD, form(also_to=also_to))
    assert response.status_code == 200
    assert problem in errors_of(response)
    assert not Post.objects.exists() and not bot.calls


def test_the_form_takes_other_channels(admin_client: Client) -> None:
    response = admin_client.post(ADD, form(also_to="@second_channel\nt.me/third_channel"))
    assert response.status_code == 302, errors_of(response)
    assert Post.objects.get().also_to == ["@second_channel", "@third_channel"]


def test_a_recurring_post_s_occurrence_goes_to_every_channel(bot: FakeTelegramServer) -> None:
    post = post_create(
        content=PostContent(
            channel=CHANNEL,
            text="Daily everywhere",
            also_to=OTHERS[:1],
            repeat="daily",
            repeat_until=timezone.localdate() + timedelta(days=3),
        ),
        created_by="test",
        publish_at=timezone.now() + timedelta(minutes=5),
    )
    Post.objects.filter(pk=post.pk).update(publish_at=timezone.now())
    Job.objects.filter(dedupe_key=f"recur:{post.pk}").update(next_attempt=timezone.now())
    run_all()
    assert sends(bot) == {CHANNEL: 1, "@second_channel": 1}
