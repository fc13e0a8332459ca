"""The posts and jobs admin pages in a real browser: create a photo post, publish it now, see
the upload reach Telegram and the status in the list; schedule one and find its job."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from content.models import Post, PostStatus
from tests.content.conftest import CHANNEL, png_bytes
from tests.fakes.telegram import FakeTelegramServer


@pytest.fixture
def wired(live_bot: FakeTelegramServer, settings: Any, tmp_path: Path) -> FakeTelegramServer:
    settings.MEDIA_ROOT = str(tmp_path / "media")
    return live_bot


@pytest.mark.django_db(transaction=True)
def test_an_operator_creates_a_photo_post_and_publishes_it_now(
    admin_page: Any, live_server: Any, wired: FakeTelegramServer
) -> None:
    page = admin_page
    page.goto(f"{live_server.url}/admin/")
    page.click("a[href='/admin/content/post/add/']")
    page.fill("#id_channel", CHANNEL)
    page.fill("#id_text", "Fresh from the browser")
    page.set_input_files(
        "#id_photo", files=[{"name": "photo.png", "mimeType": "image/png", "buffer": png_bytes()}]
    )
    page.fill("#id_buttons", "Read more | https://example.org/read")
    page.click("[name=_save]")
    page.wait_for_url(f"{live_server.url}/admin/content/post/")
    post = Post.objects.get()
    row = page.locator("#result_list tr", has=page.locator(f"input[value='{post.pk}']"))
    assert row.locator(".post-status").inner_text() == "draft"

    row.locator("input[name=_selected_action]").check()
    page.select_option("select[name=action]", "publish_now")
    page.click("#changelist-actions button[type=submit]")
    page.wait_for_selector(".messagelist")
    assert f"Post #{post.pk} published in {CHANNEL}" in page.inner_text(".messagelist")
    assert row.locator(".post-status").inner_text() == "published"

    [sent] = [c for c in wired.calls_to("sendPhoto") if not c.failed]
    assert sent.params["chat_id"] == CHANNEL
    assert sent.params["photo"].data == png_bytes()  # uploaded as multipart/form-data
    assert sent.params["caption"] == "Fresh from the browser"
    assert sent.params["reply_markup"] == {
        "inline_keyboard": [[{"text": "Read more", "url": "https://example.org/read"}]]
    }
    post.refresh_from_db()
    assert post.status == PostStatus.PUBLISHED and post.channel_message_id is not None

    # The change page shows the stored photo, served to staff only.
    page.click(f"#result_list a[href$='/content/post/{post.pk}/change/']")
    image = page.locator("img[alt=photo]")
    image.wait_for()
    assert page.evaluate("(img) => img.naturalWidth", image.element_handle()) == 2


@pytest.mark.django_db(transaction=True)
def test_an_operator_schedules_a_post_and_finds_its_job(
    admin_page: Any, live_server: Any, wired: FakeTelegramServer
) -> None:
    page = admin_page
    when = timezone.now() + timedelta(days=1)
    page.goto(f"{live_server.url}/admin/content/post/add/")
    page.fill("#id_channel", CHANNEL)
    page.fill("#id_text", "Tomorrow's news")
    page.fill("#id_publish_at", f"{when:%Y-%m-%dT%H:%M}")
    page.click("[name=_continue]")
    page.wait_for_selector(".messagelist")
    post = Post.objects.get()
    assert post.status == PostStatus.SCHEDULED
    assert page.locator(".post-status").inner_text() == "scheduled"

    # From the post to its job, then the jobs list.
    page.click("text=content.publish #")
    page.wait_for_url("**/admin/telegram_bot/job/*/change/")
    page.goto(f"{live_server.url}/admin/telegram_bot/job/")
    row = page.locator("#result_list tr", has_text="content.publish")
    assert "queued" in row.inner_text().lower()
    assert wired.calls_to("sendMessage") == []


@pytest.mark.django_db(transaction=True)
def test_the_preview_follows_what_the_author_types(
    admin_page: Any, live_server: Any, wired: FakeTelegramServer
) -> None:
    page = admin_page
    page.goto(f"{live_server.url}/admin/content/post/add/")
    assert "tg-empty" in page.inner_html("#post-preview")
    page.fill("#id_channel", CHANNEL)
    page.fill("#id_text", "Hello <all> #news")
    page.wait_for_selector("#post-preview-text .tg-hashtag")
    assert page.inner_text("#post-preview-text") == "Hello <all> #news"
    page.set_input_files(
        "#id_photo", files=[{"name": "photo.png", "mimeType": "image/png", "buffer": png_bytes()}]
    )
    page.wait_for_selector("#post-preview-photo")
    page.fill("#id_buttons", "Shop | https://example.org && Help | https://example.org/help")
    page.wait_for_selector("#post-preview .tg-buttons .tg-button >> nth=1")
    page.fill("#id_buttons", "Shop | ftp://example.org")
    page.wait_for_selector("#post-preview-problems")
    assert not Post.objects.exists()  # previewing saves nothing
