"""The panel's preview against a photo replaced meanwhile, and its edit steps against a
message without text."""

from __future__ import annotations

from typing import Any

import pytest

from content import delivery, services
from content.models import Post
from content.publishing import post_publish_now
from content.services import PostChanges
from tests.builders import make_callback_update, make_message_update
from tests.conftest import OWNER_ID
from tests.content.conftest import channel_sends, make_post, png_bytes, png_upload
from tests.fakes.telegram import FakeTelegramServer

pytestmark = pytest.mark.django_db


def test_a_preview_does_not_give_a_photo_replaced_meanwhile_the_old_photos_file_id(
    bot: FakeTelegramServer, post_update: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The panel's Preview sends the post's uploaded photo, then remembers Telegram's file_id
    (``post_photo_remember``). An operator who uploads a new photo in the admin site while the
    preview is in flight leaves the post with the new photo and an empty file_id; the
    remember step then fills it with the OLD photo's file_id, and the publication sends the
    old photo (``outgoing`` prefers the file_id) instead of the one the post now has."""
    post = make_post("A caption", photo=png_upload())
    new_photo = png_bytes(width=3, height=3)
    original_send = delivery.send
    edited = []

    def send_while_an_operator_replaces_the_photo(message: Any) -> Any:
        answer = original_send(message)
        if not edited:  # the admin site's save commits while the preview is in flight
            edited.append(True)
            services.post_update(
                post_id=post.pk,
                changes=PostChanges(photo=png_upload("new.png", width=3, height=3)),
            )
        return answer

    monkeypatch.setattr(delivery, "send", send_while_an_operator_replaces_the_photo)
    response = post_update(make_callback_update(f"content:pre:{post.pk}", user_id=OWNER_ID))
    assert response["X-Update-Outcome"] == "processed"
    post.refresh_from_db()
    assert post.photo.name.endswith(".png")

    post_publish_now(post_id=post.pk)

    [published] = channel_sends(bot, "sendPhoto")
    photo = published.params["photo"]
    assert getattr(photo, "data", photo) == new_photo, (
        f"the channel got {photo!r}: the preview's file_id of the replaced photo"
    )


def test_a_sticker_sent_for_new_text_does_not_wipe_the_published_caption(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    """The panel's "Edit text" step takes ``ctx.update.text`` (text or caption, "" for
    anything else): a sticker (or a voice message, a location...) sent at that step becomes an
    empty caption, which a photo post may have, so the published channel message loses its
    caption at once (editMessageCaption with "") instead of the admin being asked for text."""
    post = post_publish_now(
        post_id=make_post("Our launch, in one picture", photo_file_id="AgADphoto").pk
    )
    assert post.channel_message_id is not None
    response = post_update(make_callback_update(f"content:edit:{post.pk}", user_id=OWNER_ID))
    assert response["X-Update-Outcome"] == "processed"
    sticker = {
        "file_id": "CAACsticker",
        "file_unique_id": "st1",
        "type": "regular",
        "width": 512,
        "height": 512,
        "is_animated": False,
        "is_video": False,
    }
    update = make_message_update(None, chat_id=OWNER_ID, user_id=OWNER_ID, sticker=sticker)
    assert post_update(update)["X-Update-Outcome"] == "processed"

    post = Post.objects.get(pk=post.pk)
    assert bot.calls_to("editMessageCaption") == [], (
        "the channel message's caption was replaced by an empty one"
    )
    assert post.text == "Our launch, in one picture"
    told = bot.calls_to("sendMessage")[-1].params["text"]
    assert told.startswith("That message has no text")


def test_a_message_without_text_sent_for_new_buttons_keeps_the_published_buttons(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    buttons = [[{"text": "Site", "url": "https://example.com"}]]
    post = post_publish_now(post_id=make_post("Launch", buttons=buttons).pk)
    post_update(make_callback_update(f"content:btn:{post.pk}", user_id=OWNER_ID))
    location = {"latitude": 59.9, "longitude": 10.7}
    update = make_message_update(None, chat_id=OWNER_ID, user_id=OWNER_ID, location=location)
    assert post_update(update)["X-Update-Outcome"] == "processed"
    assert bot.calls_to("editMessageReplyMarkup") == []
    assert Post.objects.get(pk=post.pk).buttons == buttons
