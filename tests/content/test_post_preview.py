"""The post form's preview (content.preview): the message as Telegram will show it, rendered
on the server with the product's own rules: plain text escaped with the links, @mentions and
#hashtags Telegram marks, the photo as a placeholder, a poll, the buttons in their rows, the
publication time in the named zone, and what a save would refuse."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client, override_settings
from django.utils import timezone

from content.preview import telegram_text
from tests.content.conftest import CHANNEL, make_post

pytestmark = pytest.mark.django_db
URL = "/admin/content/posts/preview/"


def block(page: str, name: str) -> str:
    found = re.search(rf'id="post-preview-{name}"[^>]*>(.*?)</(?:div|p|ul)>', page, re.S)
    return found.group(1).strip() if found else ""


def test_text_reads_as_telegram_shows_plain_text() -> None:
    html = telegram_text("Hi <b>all</b> & @news_channel\nsee https://example.org/a, #news")
    assert "&lt;b&gt;all&lt;/b&gt; &amp;" in html  # sent as plain text: no HTML formatting
    assert '<span class="tg-entity tg-mention">@news_channel</span>' in html
    assert '<span class="tg-entity tg-url">https://example.org/a</span>,' in html
    assert '<span class="tg-entity tg-hashtag">#news</span>' in html
    assert "<br>" in html
    assert "@ab" in telegram_text("@ab is too short") and "tg-mention" not in telegram_text("@ab")


def test_the_preview_endpoint_renders_what_the_form_holds(admin_client: Client) -> None:
    response = admin_client.post(
        URL,
        {
            "channel": CHANNEL,
            "text": "Sale <today>",
            "buttons": "Shop | https://example.org && Help | https://example.org/help\nMore | tg://resolve?domain=x",
            "has_photo": "on",
        },
    )
    assert response.status_code == 200
    page = response.content.decode()
    assert block(page, "text") == "Sale &lt;today&gt;"
    assert 'id="post-preview-photo"' in page
    rows = re.findall(r'<div class="tg-buttons">(.*?)</div>', page)
    assert len(rows) == 2 and rows[0].count("tg-button") == 2
    assert "Not scheduled" in block(page, "when")
    assert "post-preview-problems" not in page


def test_the_preview_says_what_a_save_would_refuse(admin_client: Client) -> None:
    page = admin_client.post(
        URL, {"channel": "news", "text": "", "buttons": "Shop | ftp://example.org"}
    ).content.decode()
    problems = block(page, "problems")
    assert "@username" in problems  # the channel
    assert "ftp" in problems or "http" in problems  # the button's link
    long = admin_client.post(
        URL, {"channel": CHANNEL, "text": "x" * 1025, "has_photo": "on"}
    ).content.decode()
    assert "1024" in block(long, "problems")  # a caption's limit, not a message's


@override_settings(TIME_ZONE="Europe/Moscow")
def test_the_publication_time_is_in_the_named_zone(admin_client: Client) -> None:
    ahead = timezone.localtime(timezone.now() + timedelta(days=2)).replace(
        hour=18, minute=0, second=0, microsecond=0
    )
    page = admin_client.post(
        URL, {"channel": CHANNEL, "text": "Hi", "publish_at": f"{ahead:%Y-%m-%dT%H:%M}"}
    ).content.decode()
    assert block(page, "when") == f"Will be published at {ahead:%Y-%m-%d} 18:00 (Europe/Moscow)."
    past = admin_client.post(
        URL, {"channel": CHANNEL, "text": "Hi", "publish_at": "2020-01-01T10:00"}
    ).content.decode()
    assert "in the past" in block(past, "problems")


def test_a_poll_shows_its_question_and_answers(admin_client: Client) -> None:
    page = admin_client.post(
        URL, {"channel": CHANNEL, "poll_question": "Tea or coffee?", "poll_options": "Tea\nCoffee"}
    ).content.decode()
    assert "Tea or coffee?" in page and "<li>Coffee</li>" in page
    assert "post-preview-text" not in page


def test_the_forms_show_the_preview(admin_client: Client) -> None:
    add = admin_client.get("/admin/content/post/add/").content.decode()
    assert 'id="post-preview-holder"' in add and "content/post_preview.js" in add
    assert f'data-preview-url="{URL}"' in add
    post = make_post("Hello #all", buttons=[[{"text": "Go", "url": "https://example.org"}]])
    change = admin_client.get(f"/admin/content/post/{post.pk}/change/").content.decode()
    assert '<span class="tg-entity tg-hashtag">#all</span>' in change
    assert '<span class="tg-button" title="https://example.org">Go</span>' in change
    assert f'data-post-id="{post.pk}"' in change


def test_what_the_form_does_not_hold_is_the_saved_posts(admin_client: Client) -> None:
    post = make_post("Saved text", publish_in=timedelta(days=1))
    page = admin_client.post(URL, {"post_id": str(post.pk), "buttons": ""}).content.decode()
    assert block(page, "text") == "Saved text"
    assert "Will be published at" in block(page, "when")


def test_the_preview_needs_a_post_permission(client: Client) -> None:
    user = User.objects.create_user("viewer", password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_post"))
    client.force_login(user)
    assert client.post(URL, {"text": "Hi"}).status_code == 403
    assert client.get(URL).status_code in (403, 405)
