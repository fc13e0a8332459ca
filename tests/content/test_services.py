"""Post services: refused input, schedules and their job, edits in the channel, archiving."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from content.errors import PostStateError
from content.models import Post, PostStatus
from content.publishing import post_publish_now
from content.services import (
    PostChanges,
    PostContent,
    post_archive,
    post_create,
    post_delete_draft,
    post_schedule,
    post_unschedule,
    post_update,
)
from telegram_bot.jobs.models import Job, JobStatus
from telegram_bot.jobs.runner import run_due
from tests.content.conftest import CHANNEL, channel_sends, make_post, png_upload, publish_job
from tests.fakes.telegram import FakeTelegramServer

BUTTONS = [[{"text": "Site", "url": "https://example.org"}]]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (PostContent(channel=CHANNEL, text="x" * 4097), "at most 4096"),
        (PostContent(channel=CHANNEL, text="x" * 1025, photo_file_id="AgAD"), "at most 1024"),
        (PostContent(channel="not a channel", text="hi"), "@username"),
        (
            PostContent(channel=CHANNEL, text="hi", buttons=[[{"text": "x", "url": "ftp://a"}]]),
            "not an http",
        ),
    ],
)
def test_it_refuses_input_outside_telegrams_limits_when_saving(
    content: PostContent, problem: str
) -> None:
    with pytest.raises(ValidationError, match=problem):
        post_create(content=content, created_by="test")
    assert Post.objects.count() == 0


@pytest.mark.django_db
def test_it_refuses_a_caption_too_long_for_an_uploaded_photo() -> None:
    content = PostContent(channel=CHANNEL, text="x" * 2000, photo=png_upload())
    with pytest.raises(ValidationError, match="at most 1024"):
        post_create(content=content, created_by="test")


@pytest.mark.django_db
def test_it_refuses_a_past_or_naive_publish_time() -> None:
    content = PostContent(channel=CHANNEL, text="hi")
    with pytest.raises(ValidationError, match="in the past"):
        post_create(
            content=content, created_by="t", publish_at=timezone.now() - timedelta(minutes=1)
        )
    post = make_post()
    with pytest.raises(ValidationError, match="time zone"):
        post_schedule(
            post_id=post.pk, publish_at=(timezone.now() + timedelta(hours=1)).replace(tzinfo=None)
        )
    assert Job.objects.count() == 0


@pytest.mark.django_db
def test_a_draft_has_no_job_and_scheduling_sets_one_at_publish_at() -> None:
    post = make_post()
    assert post.status == PostStatus.DRAFT and Job.objects.count() == 0
    when = timezone.now() + timedelta(hours=2)
    post = post_schedule(post_id=post.pk, publish_at=when)
    assert post.status == PostStatus.SCHEDULED
    job = publish_job(post)
    assert (job.kind, job.payload, job.next_attempt) == (
        "content.publish",
        {"post_id": post.pk},
        when,
    )


@pytest.mark.django_db
def test_rescheduling_replaces_the_queued_job_and_unscheduling_cancels_it() -> None:
    post = make_post(publish_in=timedelta(hours=1))
    first = publish_job(post)
    later = timezone.now() + timedelta(hours=3)
    post_schedule(post_id=post.pk, publish_at=later)
    first.refresh_from_db()
    assert first.status == JobStatus.CANCELLED
    assert publish_job(post).next_attempt == later
    post = post_unschedule(post_id=post.pk)
    assert (post.status, post.publish_at) == (PostStatus.DRAFT, None)
    assert publish_job(post).status == JobStatus.CANCELLED


@pytest.mark.django_db
def test_a_panel_update_creates_its_post_once() -> None:
    content = PostContent(channel=CHANNEL, text="from the panel", photo_file_id="AgADfile")
    first = post_create(content=content, created_by="telegram:1000", source_update_id=777)
    again = post_create(content=content, created_by="telegram:1000", source_update_id=777)
    assert first.pk == again.pk and Post.objects.count() == 1


@pytest.mark.django_db
def test_it_edits_an_unpublished_post_in_the_database_only(bot: FakeTelegramServer) -> None:
    post = make_post(publish_in=timedelta(hours=1))
    post = post_update(
        post_id=post.pk,
        changes=PostChanges(text="Better text", buttons=BUTTONS, photo=png_upload()),
    )
    assert (post.text, post.buttons, post.status) == ("Better text", BUTTONS, PostStatus.SCHEDULED)
    assert post.photo.name.startswith("content/photos/")
    assert bot.calls == []
    with pytest.raises(ValidationError, match="at most 1024"):
        post_update(post_id=post.pk, changes=PostChanges(text="x" * 1500))


@pytest.mark.django_db
def test_it_edits_a_published_text_post_with_edit_message_text(bot: FakeTelegramServer) -> None:
    post = post_publish_now(post_id=make_post("First version").pk)
    post = post_update(post_id=post.pk, changes=PostChanges(text="Second version", buttons=BUTTONS))
    [edit] = bot.calls_to("editMessageText")
    assert edit.params == {
        "chat_id": CHANNEL,
        "message_id": post.channel_message_id,
        "text": "Second version",
        "reply_markup": {"inline_keyboard": BUTTONS},
    }
    assert (post.text, post.buttons, post.status) == (
        "Second version",
        BUTTONS,
        PostStatus.PUBLISHED,
    )
    assert bot.message(CHANNEL, post.channel_message_id)["text"] == "Second version"
    post_update(post_id=post.pk, changes=PostChanges(text="Second version"))  # unchanged: no call
    assert len(bot.calls_to("editMessageText")) == 1


@pytest.mark.django_db
def test_it_edits_a_published_photo_post_with_edit_message_caption(
    bot: FakeTelegramServer,
) -> None:
    post = post_publish_now(post_id=make_post("Old caption", photo=png_upload()).pk)
    post_update(post_id=post.pk, changes=PostChanges(text="New caption"))
    [edit] = bot.calls_to("editMessageCaption")
    assert edit.params["caption"] == "New caption"
    assert edit.params["reply_markup"] == {"inline_keyboard": []}
    with pytest.raises(ValidationError, match="at most 1024"):
        post_update(post_id=post.pk, changes=PostChanges(text="x" * 1025))


@pytest.mark.django_db
def test_a_failed_edit_in_telegram_changes_nothing(bot: FakeTelegramServer) -> None:
    post = post_publish_now(post_id=make_post("Kept").pk)
    bot.fail_next(
        "editMessageText", status=400, description="Bad Request: message to edit not found"
    )
    with pytest.raises(Exception, match="message to edit not found"):
        post_update(post_id=post.pk, changes=PostChanges(text="Lost"))
    post.refresh_from_db()
    assert (post.text, post.attempt_token) == ("Kept", "")


@pytest.mark.django_db
def test_a_published_post_keeps_its_channel_and_photo(bot: FakeTelegramServer) -> None:
    post = post_publish_now(post_id=make_post().pk)
    with pytest.raises(PostStateError, match="only its text and buttons"):
        post_update(post_id=post.pk, changes=PostChanges(channel="@other_channel"))


@pytest.mark.django_db
def test_archiving_a_scheduled_post_cancels_its_job(bot: FakeTelegramServer) -> None:
    post = make_post(publish_in=timedelta(minutes=1))
    post = post_archive(post_id=post.pk)
    assert post.status == PostStatus.ARCHIVED
    assert publish_job(post).status == JobStatus.CANCELLED
    assert run_due("w1") == 0 and channel_sends(bot) == []
    with pytest.raises(PostStateError):
        post_update(post_id=post.pk, changes=PostChanges(text="too late"))


@pytest.mark.django_db
def test_archiving_a_published_post_keeps_or_deletes_the_message(bot: FakeTelegramServer) -> None:
    kept = post_publish_now(post_id=make_post("Kept").pk)
    kept = post_archive(post_id=kept.pk)
    assert kept.status == PostStatus.ARCHIVED and not kept.message_deleted
    assert bot.calls_to("deleteMessage") == []
    gone = post_publish_now(post_id=make_post("Gone").pk)
    gone = post_archive(post_id=gone.pk, delete_message=True)
    assert gone.status == PostStatus.ARCHIVED and gone.message_deleted
    [delete] = bot.calls_to("deleteMessage")
    assert delete.params == {"chat_id": CHANNEL, "message_id": gone.channel_message_id}
    assert bot.message(CHANNEL, gone.channel_message_id) is None
    assert post_archive(post_id=gone.pk, delete_message=True).status == PostStatus.ARCHIVED
    assert len(bot.calls_to("deleteMessage")) == 1


@pytest.mark.django_db
def test_a_message_already_deleted_in_the_channel_still_archives(bot: FakeTelegramServer) -> None:
    post = post_publish_now(post_id=make_post().pk)
    bot.fail_next(
        "deleteMessage", status=400, description="Bad Request: message to delete not found"
    )
    assert post_archive(post_id=post.pk, delete_message=True).status == PostStatus.ARCHIVED


@pytest.mark.django_db
def test_only_posts_that_never_reached_the_channel_are_deleted(bot: FakeTelegramServer) -> None:
    draft = make_post()
    post_delete_draft(post_id=draft.pk)
    assert not Post.objects.filter(pk=draft.pk).exists()
    published = post_publish_now(post_id=make_post().pk)
    with pytest.raises(PostStateError, match="archive it instead"):
        post_delete_draft(post_id=published.pk)
