"""Albums: 2-10 photos and videos by file id or link, sent with one sendMediaGroup, published
once (the fake records it), its caption editable, deleted whole; refused in the form outside
Telegram's limits with nothing sent."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from content.models import Post, PostStatus
from content.publishing import post_publish, post_publish_now
from content.removal import post_expire
from content.services import PostChanges, post_update
from tests.content.conftest import CHANNEL, png_upload
from tests.content.test_admin import ADD, errors_of, form
from tests.fakes.telegram import FakeTelegramServer

pytestmark = pytest.mark.django_db
FILE_ID = "AgACAgIAAxkBAAIBQ2VhZmFrZV9maWxlX2lk"
ALBUM = f"photo {FILE_ID}\nvideo https://example.org/clip.mp4\nphoto https://example.org/b.jpg"


def album_form(**fields: Any) -> dict[str, Any]:
    return form(**{"text": "Our week", "album": ALBUM, **fields})


def groups(bot: FakeTelegramServer) -> list[Any]:
    return [c for c in bot.calls_to("sendMediaGroup") if not c.failed]


def test_an_album_is_published_once_with_send_media_group(
    bot: FakeTelegramServer, admin_client: Client
) -> None:
    response = admin_client.post(ADD, album_form(silent="on"))
    assert response.status_code == 302, errors_of(response)
    post = Post.objects.get()
    assert [item["type"] for item in post.album] == ["photo", "video", "photo"]
    post = post_publish_now(post_id=post.pk)
    assert post.status == PostStatus.PUBLISHED
    [sent] = groups(bot)
    media = sent.params["media"]
    assert media[0]["media"] == FILE_ID and media[0]["caption"] == "Our week"
    assert all("caption" not in m for m in media[1:])
    assert sent.params["disable_notification"] is True
    assert len(post.album_message_ids) == 3 and post.channel_message_id == post.album_message_ids[0]
    post_publish(post_id=post.pk)  # re-delivered: nothing
    assert len(bot.calls_to("sendMediaGroup")) == 1 and not bot.calls_to("sendMessage")


def test_a_published_album_s_caption_is_edited_and_the_album_deleted_whole(
    bot: FakeTelegramServer, admin_client: Client
) -> None:
    admin_client.post(
        ADD, album_form(delete_at=(timezone.now() + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M"))
    )
    post = post_publish_now(post_id=Post.objects.get().pk)
    post = post_update(post_id=post.pk, changes=PostChanges(text="Our great week"))
    [edit] = bot.calls_to("editMessageCaption")
    assert edit.params["caption"] == "Our great week" and "reply_markup" not in edit.params
    with pytest.raises(Exception, match="cannot have buttons"):
        post_update(
            post_id=post.pk,
            changes=PostChanges(buttons=[[{"text": "Site", "url": "https://example.org"}]]),
        )
    Post.objects.filter(pk=post.pk).update(delete_at=timezone.now())
    post = post_expire(post_id=post.pk)
    [delete] = bot.calls_to("deleteMessages")
    assert delete.params["message_ids"] == post.album_message_ids
    assert post.status == PostStatus.ARCHIVED and post.message_deleted
    assert all(bot.message(CHANNEL, i) is None for i in post.album_message_ids)


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"album": f"photo {FILE_ID}"}, "2 to 10 photos or videos; this one has 1"),
        ({"album": "\n".join([f"photo {FILE_ID}"] * 11)}, "this one has 11"),
        ({"album": f"photo {FILE_ID}\naudio {FILE_ID}"}, "Line 2: write"),
        ({"album": f"photo {FILE_ID}\nphoto ftp://example.org/a.jpg"}, "Line 2: give a Telegram"),
        ({"album": f"photo {FILE_ID}\nphoto short"}, "Line 2: give a Telegram"),
        ({"text": "x" * 1025}, "at most 1024"),
        ({"buttons": "Site | https://example.org"}, "cannot have buttons"),
        ({"photo": "PHOTO"}, "sent alone"),
    ],
)
def test_a_bad_album_is_refused_in_the_form_and_nothing_is_sent(
    bot: FakeTelegramServer, admin_client: Client, fields: dict[str, Any], problem: str
) -> None:
    if fields.get("photo") == "PHOTO":
        fields["photo"] = png_upload()
    response = admin_client.post(ADD, album_form(**fields))
    assert response.status_code == 200
    assert problem in errors_of(response)
    assert not Post.objects.exists() and not bot.calls


MP4_HEAD = b"\x00\x00\x00\x18ftypmp42" + b"\x00" * 64


def test_photos_and_videos_uploaded_in_the_console_are_attached_once(
    bot: FakeTelegramServer, admin_client: Client, media_root: Any
) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    video = SimpleUploadedFile("clip.mp4", MP4_HEAD, content_type="video/mp4")
    response = admin_client.post(
        ADD,
        form(
            text="Uploaded",
            album=f"photo {FILE_ID}",
            album_files=[png_upload("a.png"), video],
        ),
    )
    assert response.status_code == 302, errors_of(response)
    post = Post.objects.get()
    assert [item["type"] for item in post.album] == ["photo", "photo", "video"]
    stored = [item["media"].removeprefix("upload:") for item in post.album[1:]]
    assert all((media_root / name).is_file() for name in stored)
    assert stored[1].endswith(".mp4") and stored[0].endswith(".png")
    post = post_publish_now(post_id=post.pk)
    [sent] = groups(bot)
    media = sent.params["media"]
    assert media[0]["media"] == FILE_ID
    assert [m["media"] for m in media[1:]] == ["attach://file1", "attach://file2"]
    assert sent.params["_attachments"]["file2"].data == MP4_HEAD
    assert post.status == PostStatus.PUBLISHED and len(post.album_message_ids) == 3


def test_uploads_outside_the_limits_are_refused_and_nothing_is_stored(
    bot: FakeTelegramServer, admin_client: Client, media_root: Any
) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    from content.validation import check_album_upload

    text = SimpleUploadedFile("notes.txt", b"just text, not media", content_type="text/plain")
    response = admin_client.post(ADD, form(album=f"photo {FILE_ID}", album_files=[text]))
    assert "notes.txt: An album file is a JPEG, PNG or WebP photo or an MP4 video" in errors_of(
        response
    )
    too_many = "\n".join([f"photo {FILE_ID}"] * 9)
    response = admin_client.post(
        ADD, form(album=too_many, album_files=[png_upload("a.png"), png_upload("b.png")])
    )
    assert "this one has 11" in errors_of(response)
    assert not Post.objects.exists() and not bot.calls
    assert not (media_root / "content" / "album").exists()
    big = SimpleUploadedFile("big.mp4", MP4_HEAD, content_type="video/mp4")
    big.size = 50 * 1024 * 1024 + 1
    with pytest.raises(Exception, match="at most 50 MB"):
        check_album_upload(big)


def test_the_fake_refuses_an_attach_reference_without_its_file(bot: FakeTelegramServer) -> None:
    from telegram_bot.bot import get_client
    from telegram_bot.errors import TelegramApiError

    media = [{"type": "photo", "media": "attach://gone"}, {"type": "photo", "media": FILE_ID}]
    with pytest.raises(TelegramApiError, match="attach://gone"):
        get_client().call("sendMediaGroup", chat_id=CHANNEL, media=media)
