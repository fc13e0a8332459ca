"""Screenshots of the operators' main pages at a desktop width and a phone width, in English
and in Russian, kept under ``var/screenshots/`` (gitignored; the path is printed) or
``SCREENSHOTS_DIR`` (``make screenshots`` writes the ones in ``docs/screenshots/``). A page
fails when, at 390 px, it is wider than the window (the whole page scrolls sideways), when its
JavaScript logs an error, or when the Russian page shows the English page's title.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from content.models import Post, PostStatus
from stats.models import ChatUserProfile, DailyUserStat, StatsChat
from support.models import Ticket, TicketMessage
from telegram_bot.audit import Actor, audit_record
from telegram_bot.jobs.models import Job, JobStatus

SHOTS = Path(
    os.environ.get("SCREENSHOTS_DIR") or Path(__file__).resolve().parents[2] / "var" / "screenshots"
)
CHAT = -1001234567890
WIDTHS = {"desktop": (1440, 900), "phone": (390, 844), "phone-dark": (390, 844)}


def seed() -> dict[str, str]:
    """Realistic data: two weeks of a busy chat, a ticket with a long conversation and a voice
    message, posts, audit entries and a failed job. Returns each page's path."""
    today = datetime.now(UTC).date()
    StatsChat.objects.create(chat_id=CHAT, title="Клуб любителей Python · community chat")
    names = ["Алексей Смирнов", "Maria García-López", "Jean-Baptiste Emmanuel Zorg", "Ли Вэй"]
    for user_id, name in enumerate(names, start=1):
        ChatUserProfile.objects.create(
            chat_id=CHAT, user_id=user_id, display_name=name, username=f"user_{user_id}"
        )
        for back in range(14):
            count = 5 + (user_id * 7 + back * 3) % 40
            DailyUserStat.objects.create(
                chat_id=CHAT,
                day=today - timedelta(days=back),
                user_id=user_id,
                message_count=count,
                word_count=count * 6,
                hour_09=count // 2,
                hour_20=count - count // 2,
            )
    ticket = Ticket.objects.create(
        bot_id=1,
        number=1,
        user_id=4242,
        chat_id=4242,
        user_name="Алексей Смирнов",
        subject="The export button does nothing when I press it on the statistics page",
        assignee="site:operator",
        opened_update_id=1,
    )
    now = timezone.now()
    entries = [
        ("user", "text", "The export button does nothing when I press it. " * 6, ""),
        ("admin", "text", "Which browser do you use? https://example.org/" + "x" * 80, ""),
        ("user", "voice", "", "AwACAgIAAxkBAAIBQ2Zfakefileidthatisverylongandunbroken" * 2),
    ]
    for minutes, (sender, kind, text, file_id) in enumerate(entries):
        TicketMessage.objects.create(
            ticket=ticket,
            sender=sender,
            kind=kind,
            text=text,
            file_id=file_id,
            author_name="operator" if sender == "admin" else "Алексей Смирнов",
            created_at=now - timedelta(minutes=30 - minutes),
            user_notified_at=now if sender == "admin" else None,
        )
    Post.objects.create(
        channel="@news_channel", text="Weekly digest", status=PostStatus.SCHEDULED,
        publish_at=now + timedelta(hours=2),
    )  # fmt: skip
    Job.objects.create(kind="support.deliver", status=JobStatus.FAILED, last_error="boom")
    for number in range(3):
        audit_record(
            action="warn",
            actor=Actor(telegram_id=10 + number, name="Maria García-López"),
            source="command",
            chat_id=CHAT,
            target_id=20 + number,
            target_name="Jean-Baptiste Emmanuel Zorg",
            reason="spam links in three messages in a row, after a warning " * 2,
        )
    start = (today - timedelta(days=13)).isoformat()
    return {
        "overview": "/admin/",
        "dashboard": f"/admin/stats/?chat_id={CHAT}&start={start}&end={today.isoformat()}",
        "ticket": f"/admin/support/ticket/{ticket.pk}/change/",
        "post-form": "/admin/content/post/add/",
        "audit-log": "/admin/telegram_bot/auditentry/",
        "member": f"/admin/stats/member/{CHAT}/1/",
    }


CASES = [
    pytest.param(name, width, language, id=f"{name}-{width}-{language}")
    for name in ("overview", "dashboard", "ticket", "post-form", "audit-log", "member")
    for width in WIDTHS
    for language in ("en", "ru")
    if width != "phone-dark" or name == "overview"
]
# Each page's title in the two languages (the Russian one must not fall back to English).
TITLES = {
    "overview": ("Overview", "Обзор"),
    "dashboard": ("Statistics", "Статистика"),
    "ticket": ("Ticket #", "Обращение #"),
    "post-form": ("Add post", "Добавить пост"),
    "audit-log": ("audit", "аудит"),
    "member": ("Member", "Участник"),
}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("name", "width", "language"), CASES)
def test_the_page_fits_the_window_without_script_errors(
    admin_page: Any, live_server: Any, name: str, width: str, language: str, capsys: Any
) -> None:
    paths = seed()
    page = admin_page
    page.set_extra_http_headers({"Accept-Language": language})
    errors = watch_errors(page)
    page.set_viewport_size(dict(zip(("width", "height"), WIDTHS[width], strict=True)))
    page.emulate_media(color_scheme="dark" if width.endswith("-dark") else "light")
    page.goto(f"{live_server.url}{paths[name]}")
    page.wait_for_load_state("networkidle")
    SHOTS.mkdir(parents=True, exist_ok=True)
    shot = SHOTS / f"{name}-{width}-{language}.png"
    page.screenshot(path=str(shot), full_page=True)
    with capsys.disabled():
        print(f"\nscreenshot: {shot}")
    assert errors == [], f"JavaScript errors on {name}: {errors}"
    english, russian = TITLES[name]
    title = page.title()
    assert (russian if language == "ru" else english).lower() in title.lower(), title
    if language == "ru":
        assert english.lower() not in title.lower(), title
    if width.endswith("-dark"):
        # The cards follow the admin's dark theme (its CSS variables), not a fixed light look.
        # The colour as the screen shows it (unfold's are oklch(): a canvas gives its RGB).
        red, green, blue = page.locator(".overview-card").first.evaluate(BACKGROUND_RGB)
        background = f"rgb({red}, {green}, {blue})"
        assert red + green + blue < 3 * 100, f"a light card in dark mode: {background}"
    if width.startswith("phone"):
        overflow = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        assert overflow[0] <= overflow[1], f"{name} is {overflow[0]} px wide at {overflow[1]} px"


BACKGROUND_RGB = """(card) => {
    const canvas = document.createElement("canvas");
    canvas.width = canvas.height = 1;
    const context = canvas.getContext("2d");
    context.fillStyle = getComputedStyle(card).backgroundColor;
    context.fillRect(0, 0, 1, 1);
    return Array.from(context.getImageData(0, 0, 1, 1).data.slice(0, 3));
}"""


def watch_errors(page: Any) -> list[str]:
    """The console errors and uncaught exceptions of ``page`` from now on."""
    errors: list[str] = []

    def on_console(message: Any) -> None:
        if message.type == "error":
            errors.append(message.text)

    page.on("console", on_console)
    page.on("pageerror", lambda error: errors.append(str(error)))
    return errors
