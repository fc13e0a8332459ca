"""The posts admin (Django test client): forms refuse what Telegram would, actions publish,
archive and resolve, a published post is edited in the channel."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.utils import timezone

from content.models import Post, PostStatus
from content.publishing import post_publish_now
from telegram_bot.jobs.models import JobStatus
from tests.content.conftest import (
    CHANNEL,
    channel_sends,
    make_post,
    png_bytes,
    png_upload,
    publish_job,
)
from tests.fakes.telegram import FakeTelegramServer

pytestmark = pytest.mark.django_db
ADD = "/admin/content/post/add/"
LIST = "/admin/content/post/"


def form(**fields: Any) -> dict[str, Any]:
    data = {
        "channel": CHANNEL,
        "text": "Hello from the admin",
        "buttons": "",
        "publish_at": "",
        "_save": "Save",
    }
    data.update(fields)
    return data


def errors_of(response: Any) -> str:
    return " ".join(str(e) for e in response.context["adminform"].form.errors.values())


def test_it_creates_a_photo_post_with_buttons(
    bot: FakeTelegramServer, admin_client: Client
) -> None:
    response = admin_client.post(
        ADD, form(text="Caption", photo=png_upload(), buttons="Site | https://example.org")
    )
    assert response.status_code == 302, errors_of(response)
    post = Post.objects.get()
    assert (post.status, post.text, post.created_by) == (PostStatus.DRAFT, "Caption", "admin:admin")
    assert post.buttons == [[{"text": "Site", "url": "https://example.org"}]]
    assert post.photo.read() == png_bytes()
    page = admin_client.get(f"{LIST}{post.pk}/change/").content.decode()
    assert "Site | https://example.org" in page
    photo = admin_client.get(f"/admin/content/posts/{post.pk}/photo/")
    assert b"".join(photo.streaming_content) == png_bytes()
    assert bot.calls == []


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"text": "x" * 4097}, "at most 4096"),
        ({"text": "x" * 1025, "photo": "PHOTO"}, "at most 1024"),
        ({"channel": "news"}, "@username"),
        ({"buttons": "Site | ftp://example.org"}, "not an http"),
        ({"buttons": "\n".join(["A | https://a.io"] * 11)}, "At most 10 rows"),
        ({"publish_at": "2020-01-01T10:00"}, "in the past"),
    ],
)
def test_the_form_refuses_what_telegram_would_refuse(
    admin_client: Client, fields: dict[str, Any], problem: str
) -> None:
    if fields.get("photo") == "PHOTO":
        fields["photo"] = png_upload()
    response = admin_client.post(ADD, form(**fields))
    assert response.status_code == 200
    assert problem in errors_of(response)
    assert Post.objects.count() == 0


def test_a_time_ahead_schedules_the_post_and_its_job(admin_client: Client) -> None:
    when = timezone.now() + timedelta(days=2)
    response = admin_client.post(ADD, form(publish_at=f"{when:%Y-%m-%dT%H:%M}"))
    assert response.status_code == 302
    post = Post.objects.get()
    assert post.status == PostStatus.SCHEDULED
    assert publish_job(post).status == JobStatus.QUEUED
    page = admin_client.get(f"{LIST}{post.pk}/change/").content.decode()
    assert f"content.publish #{publish_job(post).pk}" in page


def test_publish_now_sends_the_uploaded_photo_and_shows_the_status(
    bot: FakeTelegramServer, admin_client: Client
) -> None:
    post = make_post("Admin photo", photo=png_upload())
    response = admin_client.post(
        LIST, {"action": "publish_now", "_selected_action": [post.pk]}, follow=True
    )
    assert f"Post #{post.pk} published in {CHANNEL}" in response.content.decode()
    [sent] = channel_sends(bot, "sendPhoto")
    assert sent.params["photo"].data == png_bytes()
    page = admin_client.get(LIST).content.decode()
    assert 'data-status="published"' in page


def test_publish_now_reports_telegrams_refusal(
    bot: FakeTelegramServer, admin_client: Client
) -> None:
    bot.fail_next("sendMessage", status=400, description="Bad Request: chat not found")
    post = make_post()
    response = admin_client.post(
        LIST, {"action": "publish_now", "_selected_action": [post.pk]}, follow=True
    )
    assert "chat not found" in response.content.decode()
    post.refresh_from_db()
    assert post.status == PostStatus.FAILED


def test_editing_a_published_post_edits_the_channel_message(
    bot: FakeTelegramServer, admin_client: Client
) -> None:
    post = post_publish_now(post_id=make_post("Before").pk)
    response = admin_client.post(f"{LIST}{post.pk}/change/", form(text="After"))
    assert response.status_code == 302
    [edit] = bot.calls_to("editMessageText")
    assert edit.params["text"] == "After" and edit.params["message_id"] == post.channel_message_id
    post.refresh_from_db()
    assert post.text == "After"


def test_a_refused_edit_is_reported_and_not_saved(
    bot: FakeTelegramServer, admin_client: Client
) -> None:
    post = post_publish_now(post_id=make_post("Before").pk)
    bot.fail_next(
        "editMessageText", status=400, description="Bad Request: message to edit not found"
    )
    response = admin_client.post(f"{LIST}{post.pk}/change/", form(text="After"), follow=True)
    page = response.content.decode()
    assert "Not saved" in page and "message to edit not found" in page
    assert "changed successfully" not in page
    post.refresh_from_db()
    assert post.text == "Before"


def test_archive_and_mark_published_actions(bot: FakeTelegramServer, admin_client: Client) -> None:
    published = post_publish_now(post_id=make_post("Out there").pk)
    admin_client.post(LIST, {"action": "archive_and_delete", "_selected_action": [published.pk]})
    published.refresh_from_db()
    assert published.status == PostStatus.ARCHIVED and published.message_deleted
    unknown = make_post("Maybe out there")
    Post.objects.filter(pk=unknown.pk).update(status=PostStatus.FAILED, outcome_unknown=True)
    page = admin_client.get(LIST).content.decode()
    assert "outcome unknown: check the channel" in page
    admin_client.post(LIST, {"action": "mark_published", "_selected_action": [unknown.pk]})
    unknown.refresh_from_db()
    assert unknown.status == PostStatus.PUBLISHED


def test_a_published_post_cannot_be_deleted(bot: FakeTelegramServer, admin_client: Client) -> None:
    post = post_publish_now(post_id=make_post().pk)
    assert admin_client.get(f"{LIST}{post.pk}/delete/").status_code == 403
    draft = make_post()
    admin_client.post(f"{LIST}{draft.pk}/delete/", {"post": "yes"})
    assert not Post.objects.filter(pk=draft.pk).exists()


# --- permissions ------------------------------------------------------------------------------
def staff_client(*codenames: str) -> Client:
    """A logged-in staff user (not a superuser) with only the given permissions on posts."""
    user = User.objects.create_user("editor", password="unused", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="content", codename__in=codenames)
    )
    client = Client()
    client.force_login(user)
    return client


POST_ACTIONS = ("publish_now", "unschedule", "archive", "archive_and_delete", "mark_published")


def offered_actions(client: Client) -> set[str]:
    response = client.get(LIST)
    assert response.status_code == 200
    form = response.context["action_form"]
    return {value for value, _ in form.fields["action"].choices if value} if form else set()


def test_a_staff_user_who_may_only_view_posts_is_offered_no_action(
    bot: FakeTelegramServer,
) -> None:
    viewer = staff_client("view_post")
    assert offered_actions(viewer) & set(POST_ACTIONS) == set()
    draft = make_post("Not yet")
    published = post_publish_now(post_id=make_post("Out there").pk)
    unknown = make_post("Maybe out there")
    Post.objects.filter(pk=unknown.pk).update(status=PostStatus.FAILED, outcome_unknown=True)
    sends = len(bot.calls_to("sendMessage"))
    for action in POST_ACTIONS:  # crafted POSTs: each one does nothing
        ids = [draft.pk, published.pk, unknown.pk]
        viewer.post(LIST, {"action": action, "index": "0", "_selected_action": ids})
    assert Post.objects.get(pk=draft.pk).status == PostStatus.DRAFT
    published.refresh_from_db()
    assert published.status == PostStatus.PUBLISHED and not published.message_deleted
    assert Post.objects.get(pk=unknown.pk).status == PostStatus.FAILED
    assert len(bot.calls_to("sendMessage")) == sends
    assert bot.calls_to("deleteMessage") == []


def test_archive_and_delete_needs_the_delete_permission_too(bot: FakeTelegramServer) -> None:
    assert offered_actions(staff_client("view_post", "change_post")) == {
        "publish_now",
        "unschedule",
        "archive",
        "mark_published",
    }
    User.objects.all().delete()
    editor = staff_client("change_post", "delete_post")
    assert set(POST_ACTIONS) <= offered_actions(editor)
    published = post_publish_now(post_id=make_post("Out there").pk)
    editor.post(
        LIST, {"action": "archive_and_delete", "index": "0", "_selected_action": [published.pk]}
    )
    published.refresh_from_db()
    assert published.status == PostStatus.ARCHIVED and published.message_deleted


def test_the_photo_is_served_only_to_users_who_may_view_posts() -> None:
    post = make_post("Photo", photo=png_upload())
    url = f"/admin/content/posts/{post.pk}/photo/"
    assert staff_client().get(url).status_code == 403
    User.objects.all().delete()
    response = staff_client("view_post").get(url)
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == png_bytes()


def test_adding_posts_without_the_change_permission_saves_drafts_only(
    bot: FakeTelegramServer,
) -> None:
    """Scheduling is publishing (SECURITY.md: content.change_post): a user who may only add
    posts writes drafts, whatever publication time the POST carries."""
    when = timezone.now() + timedelta(hours=1)
    form = {
        "channel": "@news_channel",
        "text": "Written for review",
        "buttons": "",
        "publish_at": when.strftime("%Y-%m-%dT%H:%M"),
        "_save": "Save",
    }
    writer = staff_client("view_post", "add_post")
    assert writer.post(f"{LIST}add/", form).status_code == 302
    draft = Post.objects.get()
    assert draft.status == PostStatus.DRAFT and draft.publish_at is None
    User.objects.all().delete()
    editor = staff_client("view_post", "add_post", "change_post")
    assert editor.post(f"{LIST}add/", {**form, "text": "Scheduled"}).status_code == 302
    assert Post.objects.get(text="Scheduled").status == PostStatus.SCHEDULED


def test_a_new_posts_form_shows_only_what_its_author_sets(admin_client: Client) -> None:
    page = admin_client.get(ADD).content.decode()
    for field in ("id_channel", "id_text", "id_photo", "id_buttons", "id_publish_at"):
        assert f'id="{field}"' in page, field
    for shown in ("field-publication_job", "field-channel_message_id", "field-photo_file_id"):
        assert shown not in page, shown
    assert "field-photo_preview" not in page
