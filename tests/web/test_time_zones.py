"""The console's one rule for times: every time shown or entered is in one named zone, the
zone's name beside it (telegram_bot.ops.zones). TIME_ZONE is Moscow here (UTC+3, no DST), so
a time labelled UTC but shown in Moscow time would be three hours off."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client, override_settings
from django.utils import timezone

from content.models import Post
from support.models import Ticket
from tests.fakes.telegram import FakeTelegramServer
from tests.support.test_admin_site import make_ticket

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("bot")]
MOSCOW = "Europe/Moscow"


@override_settings(TIME_ZONE=MOSCOW)
def test_the_post_form_takes_its_time_in_the_named_zone(admin_client: Client) -> None:
    page = admin_client.get("/admin/content/post/add/").content.decode()
    assert "Publish at (Europe/Moscow)" in page
    assert "(UTC)" not in page
    assert 'type="datetime-local"' in page
    # The calendar shortcuts' note ("You are N hours behind server time") is not on the page.
    assert "DateTimeShortcuts" not in page

    day = (timezone.now() + timedelta(days=3)).date()
    response = admin_client.post(
        "/admin/content/post/add/",
        {
            "channel": "@news_channel",
            "text": "At six in Moscow",
            "buttons": "",
            "publish_at": f"{day:%Y-%m-%d}T18:00",
            "_save": "Save",
        },
    )
    assert response.status_code == 302
    stored = Post.objects.get().publish_at
    assert stored is not None
    assert stored.astimezone(UTC) == datetime(day.year, day.month, day.day, 15, 0, tzinfo=UTC)


@override_settings(TIME_ZONE=MOSCOW)
def test_the_ticket_page_shows_its_times_in_the_named_zone(
    bot: FakeTelegramServer, admin_client: Client
) -> None:
    ticket = make_ticket(1, "when was this")
    opened = datetime(2026, 12, 1, 4, 48, 8, tzinfo=UTC)
    Ticket.objects.filter(pk=ticket.pk).update(created_at=opened)
    page = admin_client.get(f"/admin/support/ticket/{ticket.pk}/change/").content.decode()
    assert "2026-12-01 07:48:08 (Europe/Moscow)" in page
    assert " UTC" not in page


@override_settings(TIME_ZONE=MOSCOW)
def test_every_console_page_names_its_zone(admin_client: Client) -> None:
    for url in ("/admin/", "/admin/content/post/", "/admin/support/ticket/"):
        page = admin_client.get(url).content.decode()
        assert 'id="time-zone-note">Times in Europe/Moscow<' in page, url


@override_settings(TIME_ZONE=MOSCOW)
def test_the_zone_is_named_in_russian_too(admin_client: Client) -> None:
    page = admin_client.get("/admin/content/post/add/", HTTP_ACCEPT_LANGUAGE="ru").content
    text = page.decode()
    assert "Время по поясу Europe/Moscow" in text
    assert "Опубликовать (Europe/Moscow)" in text
