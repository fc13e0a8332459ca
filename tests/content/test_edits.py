"""Editing a published post: its text with editMessageText (a caption with
editMessageCaption), its buttons alone with editMessageReplyMarkup (also a poll's), each edit
audited; an edit repeated after a lost answer ("message is not modified") counts as done."""

from __future__ import annotations

import pytest
from django.test import Client

from content.errors import PostStateError
from content.models import Post
from content.publishing import post_publish_now
from content.services import PostChanges, PostContent, post_create, post_update
from telegram_bot.bot import get_client
from telegram_bot.models import AuditEntry
from tests.content.conftest import CHANNEL, make_post
from tests.content.test_admin import LIST, form
from tests.fakes.telegram import FakeTelegramServer

pytestmark = pytest.mark.django_db
SITE = [[{"text": "Site", "url": "https://example.org"}]]


def test_changing_only_the_buttons_edits_the_reply_markup_and_is_audited(
    bot: FakeTelegramServer, admin_client: Client
) -> None:
    post = post_publish_now(post_id=make_post("Stays").pk)
    response = admin_client.post(
        f"{LIST}{post.pk}/change/", form(text="Stays", buttons="Site | https://example.org")
    )
    assert response.status_code == 302
    [edit] = bot.calls_to("editMessageReplyMarkup")
    assert edit.params["reply_markup"] == {"inline_keyboard": SITE}
    assert edit.params["message_id"] == post.channel_message_id
    assert not bot.calls_to("editMessageText")
    post.refresh_from_db()
    assert post.buttons == SITE and post.text == "Stays"
    entry = AuditEntry.objects.get(action="post.edit")
    assert (entry.source, entry.outcome, entry.detail) == ("admin", "done", "buttons")
    admin_client.post(f"{LIST}{post.pk}/change/", form(text="Stays", buttons=""))
    removed = bot.calls_to("editMessageReplyMarkup")[-1]
    assert removed.params["reply_markup"] == {"inline_keyboard": []}
    stored = bot.message(CHANNEL, post.channel_message_id)
    assert stored is not None and "reply_markup" not in stored


def test_a_published_poll_s_buttons_change_but_not_its_text(bot: FakeTelegramServer) -> None:
    post = post_create(
        content=PostContent(channel=CHANNEL, poll_question="Lunch?", poll_options=["A", "B"]),
        created_by="test",
    )
    post = post_publish_now(post_id=post.pk)
    post = post_update(post_id=post.pk, changes=PostChanges(buttons=SITE))
    assert post.buttons == SITE and len(bot.calls_to("editMessageReplyMarkup")) == 1
    with pytest.raises(PostStateError, match="only its buttons"):
        post_update(post_id=post.pk, changes=PostChanges(text="Lunch at noon?"))


def test_an_edit_repeated_after_a_lost_answer_counts_as_done(bot: FakeTelegramServer) -> None:
    post = post_publish_now(post_id=make_post("Before").pk)
    # The first attempt reached Telegram, then its process died before recording it.
    get_client().edit_message_text(
        chat_id=CHANNEL, message_id=post.channel_message_id, text="After"
    )
    post = post_update(post_id=post.pk, changes=PostChanges(text="After"))
    again = bot.calls_to("editMessageText")[-1]
    assert again.failed and "not modified" in again.description
    assert Post.objects.get(pk=post.pk).text == "After"
