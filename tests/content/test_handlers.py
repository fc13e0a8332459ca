"""The panel's posts through the webhook: list with pages, the creation conversation (content,
preview, publish now or a time), editing, archiving, and who may press the buttons."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from content.models import Post, PostStatus
from content.publishing import post_publish_now
from telegram_bot.jobs.models import JobStatus
from tests.builders import make_callback_update, make_message_update
from tests.conftest import OWNER_ID
from tests.content.conftest import CHANNEL, channel_sends, make_post, publish_job
from tests.fakes.telegram import FakeTelegramServer

pytestmark = pytest.mark.django_db


def press(post_update: Any, data: str, *, user_id: int = OWNER_ID) -> None:
    response = post_update(make_callback_update(data, user_id=user_id))
    assert response["X-Update-Outcome"] in ("processed", "refused"), response.json()


def say(post_update: Any, text: str | None, **extra: Any) -> None:
    update = make_message_update(text, chat_id=OWNER_ID, user_id=OWNER_ID, **extra)
    assert post_update(update)["X-Update-Outcome"] == "processed"


def keyboard(call: Any) -> list[tuple[str, str]]:
    markup = call.params.get("reply_markup") or {}
    return [
        (b["text"], b.get("callback_data") or b.get("url", ""))
        for row in markup.get("inline_keyboard", [])
        for b in row
    ]


def last_reply(bot: FakeTelegramServer) -> Any:
    return [c for c in bot.calls_to("sendMessage") if c.params["chat_id"] == OWNER_ID][-1]


def last_edit(bot: FakeTelegramServer) -> Any:
    return bot.calls_to("editMessageText")[-1]


def callback_answers(bot: FakeTelegramServer) -> list[str]:
    return [c.params.get("text", "") for c in bot.calls_to("answerCallbackQuery")]


def test_the_panel_offers_channel_posts(bot: FakeTelegramServer, post_update: Any) -> None:
    say(post_update, "/panel")
    assert ("Channel posts", "content:list:0") in keyboard(last_reply(bot))


def test_it_lists_posts_with_pages(bot: FakeTelegramServer, post_update: Any) -> None:
    posts = [make_post(f"Post number {n}") for n in range(7)]
    archived = make_post("Old and archived")
    Post.objects.filter(pk=archived.pk).update(status=PostStatus.ARCHIVED)
    press(post_update, "content:list:0")
    first = keyboard(last_edit(bot))
    shown = [data for _, data in first if data.startswith("content:view:")]
    assert shown == [f"content:view:{p.pk}" for p in reversed(posts[2:])]
    assert ("Older »", "content:list:1") in first
    press(post_update, "content:list:1")
    second = keyboard(last_edit(bot))
    assert [d for _, d in second if d.startswith("content:view:")] == [
        f"content:view:{posts[1].pk}",
        f"content:view:{posts[0].pk}",
    ]
    assert ("« Newer", "content:list:0") in second
    assert not any(label.startswith("Older") for label, _ in second)


def test_it_creates_a_text_post_then_previews_and_publishes_it(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    press(post_update, "content:new")
    assert "Which channel" in last_reply(bot).params["text"]
    say(post_update, "https://t.me/news_channel")
    assert "Send the post" in last_reply(bot).params["text"]
    say(post_update, "Launch day!\nEverything is ready.")
    assert "Buttons under the post" in last_reply(bot).params["text"]
    say(post_update, "Site | https://example.org && Docs | https://example.org/docs")

    post = Post.objects.get()
    assert (post.status, post.channel, post.created_by) == (
        PostStatus.DRAFT,
        CHANNEL,
        f"telegram:{OWNER_ID}",
    )
    preview, controls = [c for c in bot.calls_to("sendMessage") if c.params["chat_id"] == OWNER_ID][
        -2:
    ]
    assert preview.params["text"] == "Launch day!\nEverything is ready."
    assert keyboard(preview) == [
        ("Site", "https://example.org"),
        ("Docs", "https://example.org/docs"),
    ]
    assert ("Publish now", f"content:pub:{post.pk}") in keyboard(controls)
    assert channel_sends(bot) == []

    press(post_update, f"content:pub:{post.pk}")
    post.refresh_from_db()
    assert post.status == PostStatus.PUBLISHED
    [sent] = channel_sends(bot)
    assert sent.params["text"] == post.text
    assert f"Published in {CHANNEL}." in callback_answers(bot)
    press(post_update, f"content:pub:{post.pk}")  # a second press publishes nothing
    assert len(channel_sends(bot)) == 1
    assert "cannot be published now" in callback_answers(bot)[-1]


def test_it_creates_a_photo_post_from_a_photo_message(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    press(post_update, "content:new")
    press(post_update, f"content:ch:{CHANNEL}")
    photo = [
        {"file_id": "small-id", "file_unique_id": "s", "width": 90, "height": 90},
        {"file_id": "big-id", "file_unique_id": "b", "width": 800, "height": 800},
    ]
    say(post_update, None, photo=photo, caption="Look at this")
    press(post_update, "content:skip")
    post = Post.objects.get()
    assert (post.photo_file_id, post.text, post.buttons) == ("big-id", "Look at this", [])
    [preview] = bot.calls_to("sendPhoto")
    assert preview.params["chat_id"] == OWNER_ID and preview.params["photo"] == "big-id"


def test_it_refuses_input_outside_the_limits_and_stays_in_the_step(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    press(post_update, "content:new")
    say(post_update, "not a channel")
    assert "@username" in last_reply(bot).params["text"]
    say(post_update, "@news_channel")
    say(post_update, "x" * 4097)
    assert "at most 4096" in last_reply(bot).params["text"]
    say(post_update, "Fine text")
    say(post_update, "Broken button without a link")
    assert "Label | https" in last_reply(bot).params["text"]
    say(post_update, "Bad | javascript:alert(1)")
    assert "not an http" in last_reply(bot).params["text"]
    assert Post.objects.count() == 0
    say(post_update, "Good | https://example.org")
    assert Post.objects.get().buttons == [[{"text": "Good", "url": "https://example.org"}]]


def test_it_schedules_a_post_at_a_time_and_refuses_past_times(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    post = make_post()
    press(post_update, f"content:sched:{post.pk}")
    assert "+2h" in last_reply(bot).params["text"]
    say(post_update, "2020-01-01 10:00")
    assert "in the past" in last_reply(bot).params["text"]
    before = timezone.now()
    say(post_update, "+2h")
    post.refresh_from_db()
    assert post.status == PostStatus.SCHEDULED
    assert abs((post.publish_at - before - timedelta(hours=2)).total_seconds()) < 5
    job = publish_job(post)
    assert (job.status, job.next_attempt) == (JobStatus.QUEUED, post.publish_at)
    assert "Scheduled for" in last_reply(bot).params["text"]
    say(post_update, "+3h")  # the conversation is over: not a schedule any more
    post.refresh_from_db()
    assert abs((post.publish_at - before - timedelta(hours=2)).total_seconds()) < 5


def test_it_edits_a_published_post_in_the_channel(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    post = post_publish_now(post_id=make_post("Typo hre").pk)
    press(post_update, f"content:edit:{post.pk}")
    say(post_update, "Typo here")
    [edit] = bot.calls_to("editMessageText")[-1:]
    assert edit.params["chat_id"] == CHANNEL and edit.params["text"] == "Typo here"
    press(post_update, f"content:btn:{post.pk}")
    say(post_update, "More | https://example.org/more")
    # The buttons alone: editMessageReplyMarkup, the text is not sent again.
    assert bot.calls_to("editMessageReplyMarkup")[-1].params["reply_markup"] == {
        "inline_keyboard": [[{"text": "More", "url": "https://example.org/more"}]]
    }
    post.refresh_from_db()
    assert post.text == "Typo here" and post.buttons[0][0]["text"] == "More"


def test_archive_and_delete_asks_before_deleting_the_message(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    post = post_publish_now(post_id=make_post().pk)
    press(post_update, f"content:archdel:{post.pk}")
    assert "cannot be undone" in last_edit(bot).params["text"]
    assert bot.calls_to("deleteMessage") == []
    press(post_update, f"content:archdelok:{post.pk}")
    post.refresh_from_db()
    assert post.status == PostStatus.ARCHIVED and post.message_deleted
    assert len(bot.calls_to("deleteMessage")) == 1


def test_a_post_with_an_unknown_outcome_is_marked_published_after_a_check(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    post = make_post()
    Post.objects.filter(pk=post.pk).update(status=PostStatus.FAILED, outcome_unknown=True)
    press(post_update, f"content:view:{post.pk}")
    view = last_edit(bot)
    assert "outcome unknown" in view.params["text"]
    assert ("It is in the channel", f"content:ok:{post.pk}") in keyboard(view)
    press(post_update, f"content:ok:{post.pk}")
    post.refresh_from_db()
    assert post.status == PostStatus.PUBLISHED
    assert channel_sends(bot) == []


def test_only_admins_may_press_content_buttons(bot: FakeTelegramServer, post_update: Any) -> None:
    post = make_post()
    press(post_update, f"content:pub:{post.pk}", user_id=4242)
    post.refresh_from_db()
    assert post.status == PostStatus.DRAFT
    assert channel_sends(bot) == []
    assert any("admins only" in text for text in callback_answers(bot))


def test_a_stale_or_forged_button_is_answered_not_crashed(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    press(post_update, "content:pub:999999")
    press(post_update, "content:nonsense")
    press(post_update, "content:skip")
    answers = callback_answers(bot)
    assert "This post does not exist any more." in answers
    assert "This button is not valid." in answers
    assert "This has expired. Start again from /panel." in answers


@pytest.mark.parametrize(
    "data",
    [
        "content:view:²",  # str.isdigit() accepts it, int() does not
        "content:pub:¹²",
        "content:list:²",
        "content:arch:\u0661",  # an Arabic-Indic digit: int() reads it, we do not
        "content:view:" + "9" * 30,  # past any bigint
        "content:list:" + "9" * 30,
        "content:view:999999999999999999",  # 18 digits: looked up, not found
        "content:view:-1",
        "content:view:",
    ],
)
def test_malformed_ids_in_buttons_are_answered_not_dead_lettered(
    bot: FakeTelegramServer, post_update: Any, data: str
) -> None:
    post = make_post()
    response = post_update(make_callback_update(data, user_id=OWNER_ID))
    assert response["X-Update-Outcome"] == "processed", response.json()
    assert len(bot.calls_to("answerCallbackQuery")) == 1
    post.refresh_from_db()
    assert post.status == PostStatus.DRAFT
    assert channel_sends(bot) == []


@pytest.mark.parametrize(
    "text", ["+999999999d", "+99999999999999999999999m", "+" + " " * 3000 + "x"]
)
def test_an_out_of_range_time_is_answered_and_the_conversation_goes_on(
    bot: FakeTelegramServer, post_update: Any, text: str
) -> None:
    post = make_post()
    press(post_update, f"content:sched:{post.pk}")
    say(post_update, text)
    assert "time" in last_reply(bot).params["text"].lower()
    say(post_update, "+2h")  # still in the schedule conversation
    post.refresh_from_db()
    assert post.status == PostStatus.SCHEDULED


def test_a_creation_stored_before_versions_goes_on_and_a_newer_ones_is_ended(
    bot: FakeTelegramServer, post_update: Any, memory_store: Any
) -> None:
    """The panel's conversations across deploys: a creation stored by the build before
    workflows had versions (no ``v``) goes on; one of a version this build cannot read is ended
    with a notice, nothing crashes."""
    key = f"workflow:{OWNER_ID}:{OWNER_ID}"
    press(post_update, "content:new")
    say(post_update, "https://t.me/news_channel")
    previous = {k: v for k, v in memory_store.get(key).items() if k != "v"}
    memory_store.set(key, previous)
    say(post_update, "Launch day!")
    assert "Buttons under the post" in last_reply(bot).params["text"]
    memory_store.set(key, {**memory_store.get(key), "v": 2, "data": {"draft": {"text": "x"}}})
    say(post_update, "Site | https://example.org")
    assert last_reply(bot).params["text"] == (
        "This cannot be continued after an update of the bot. Start again from /panel."
    )
    assert not Post.objects.exists()
    assert memory_store.get(key) is None
