"""The Mini App in a real Chromium at a phone's size (390x844), opened as Telegram opens it:
the page's URL carries ``#tgWebAppData=<initData>`` made here from the test bot token, and the
app's own script signs in with it. A chat admin changes the welcome text (in Russian) and a
lock (in English), and the fake Bot API records what follows: the new welcome sent to a member
who joins, a link deleted under the lock. A member and a demoted admin are refused."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from django.conf import settings

from community.models import MemberPolicy
from moderation.rules.models import Lock
from telegram_bot.models import AuditEntry
from tests.browser.conftest import TIMEOUT_MS
from tests.builders import make_message_update
from tests.community.members_helpers import join_update
from tests.conftest import WEBHOOK_SECRET
from tests.fakes.telegram import FakeTelegramServer
from tests.rules.helpers import url_entity
from tests.webapp.helpers import CREATOR, EDITOR, GROUP, MEMBER, describe_groups, init_data

PHONE = {"width": 390, "height": 844}
THEME = (
    '{"bg_color":"#17212b","text_color":"#f5f5f5","hint_color":"#708499",'
    '"link_color":"#6ab3f3","button_color":"#5288c1","button_text_color":"#ffffff",'
    '"secondary_bg_color":"#232e3c","destructive_text_color":"#ec3942"}'
)
# As tests/browser/test_screenshots.py: var/screenshots, or SCREENSHOTS_DIR (``make screenshots``
# writes docs/screenshots/).
SCREENSHOTS = Path(
    os.environ.get("SCREENSHOTS_DIR") or Path(__file__).resolve().parents[2] / "var" / "screenshots"
)


@pytest.fixture
def open_app(chromium: Any, live_server: Any) -> Any:
    contexts: list[Any] = []

    def open_as(user_id: int, language: str = "en", start: str | None = str(GROUP)) -> Any:
        context = chromium.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
        context.set_default_timeout(TIMEOUT_MS)
        contexts.append(context)
        page = context.new_page()
        data = init_data(
            settings.TELEGRAM_BOT_TOKEN, user_id, language_code=language, start_param=start
        )
        fragment = f"tgWebAppData={quote(data)}&tgWebAppThemeParams={quote(THEME)}"
        page.goto(f"{live_server.url}/app/#{fragment}")
        return page

    yield open_as
    for context in contexts:
        context.close()


def _post(live_server: Any, update: dict[str, Any]) -> None:
    response = httpx.post(
        f"{live_server.url}/telegram/webhook",
        json=update,
        headers={"X-Telegram-Bot-Api-Secret-Token": WEBHOOK_SECRET},
    )
    assert response.status_code == 200


def _wait_for(condition: Callable[[], Any], what: str, seconds: float = 10.0) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"not seen within {seconds} s: {what}")


@pytest.mark.django_db(transaction=True)
def test_an_admin_changes_the_welcome_in_russian_and_a_member_is_welcomed(
    open_app: Any, live_server: Any, live_bot: FakeTelegramServer
) -> None:
    describe_groups(live_bot)
    for n in range(3):
        said = make_message_update(f"hello {n}", chat_id=GROUP, user_id=MEMBER)
        said["message"]["from"]["first_name"] = "Mallory"
        _post(live_server, said)
    page = open_app(EDITOR, "ru")
    page.wait_for_url(f"{live_server.url}/app/c/{GROUP}/")
    assert "сообщений сегодня" in page.inner_text("main")
    assert page.inner_text("#today-messages") == "3"
    assert "Mallory" in page.inner_text("#top")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "miniapp-overview-ru.png"), full_page=True)
    # Telegram's theme colours reach the page's variables.
    background = page.evaluate(
        "getComputedStyle(document.body).getPropertyValue('background-color')"
    )
    assert background == "rgb(23, 33, 43)"
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    page.click("nav.tabs >> text=Приветствие")
    page.check("#id_welcome_enabled")
    page.fill("#id_welcome_text", "Привет, {first_name}! Читайте правила.")
    page.click("button[name=preview]")
    assert "Привет, Ann!" in page.inner_text("#preview")
    assert not MemberPolicy.objects.exists()
    asked = len(live_bot.calls_to("getChatMember"))
    page.click("button[name=save]")
    page.wait_for_selector("#saved")
    assert len(live_bot.calls_to("getChatMember")) > asked  # asked again before the change
    page.screenshot(path=str(SCREENSHOTS / "miniapp-welcome-ru.png"))
    policy = MemberPolicy.objects.get(chat_id=GROUP)
    assert policy.welcome_enabled and policy.welcome_text.startswith("Привет")
    entry = AuditEntry.objects.get(action="memberpolicy.change")
    assert (entry.actor_id, entry.source) == (EDITOR, "miniapp")

    _post(live_server, join_update(7007, first_name="Zoe"))
    sent = _wait_for(
        lambda: [c for c in live_bot.calls_to("sendMessage") if "Привет" in c.params["text"]],
        "the new welcome",
    )
    assert sent[0].params["chat_id"] == GROUP and "Привет, Zoe!" in sent[0].params["text"]


@pytest.mark.django_db(transaction=True)
def test_an_admin_locks_links_in_english_and_a_link_is_deleted(
    open_app: Any, live_server: Any, live_bot: FakeTelegramServer
) -> None:
    describe_groups(live_bot)
    page = open_app(CREATOR, "en")
    page.wait_for_url(f"{live_server.url}/app/c/{GROUP}/")
    page.click("nav.tabs >> text=Locks")
    page.select_option("#id_kind", "url")
    page.select_option("#lock-form #id_action", "delete")
    page.click("#lock-form button[type=submit]")
    page.wait_for_selector("#locks >> text=links")
    page.screenshot(path=str(SCREENSHOTS / "miniapp-locks-en.png"))
    assert Lock.objects.get(chat_id=GROUP).kind == "url"

    text = "see https://spam.example.org now"
    update = make_message_update(
        text,
        chat_id=GROUP,
        user_id=MEMBER,
        entities=[url_entity(text, "https://spam.example.org")],
    )
    _post(live_server, update)
    deleted = _wait_for(lambda: live_bot.calls_to("deleteMessage"), "the link deleted")
    assert deleted[0].params["chat_id"] == GROUP
    assert deleted[0].params["message_id"] == update["message"]["message_id"]


@pytest.mark.django_db(transaction=True)
def test_a_member_sees_no_chat(
    open_app: Any, live_server: Any, live_bot: FakeTelegramServer
) -> None:
    describe_groups(live_bot)
    page = open_app(MEMBER, "en", start=None)
    page.wait_for_selector("#chats")
    assert "not an admin of any chat" in page.inner_text("#chats")
    response = page.goto(f"{live_server.url}/app/c/{GROUP}/welcome/")
    assert response.status == 404


@pytest.mark.django_db(transaction=True)
def test_a_demoted_admin_cannot_submit(
    open_app: Any, live_server: Any, live_bot: FakeTelegramServer
) -> None:
    describe_groups(live_bot)
    page = open_app(EDITOR, "en")
    page.wait_for_url(f"{live_server.url}/app/c/{GROUP}/")
    page.goto(f"{live_server.url}/app/c/{GROUP}/welcome/")
    page.fill("#id_welcome_text", "Hello {first_name}")
    live_bot.set_chat_member(GROUP, EDITOR, "member", first_name="Ed")
    with page.expect_response(lambda r: r.request.method == "POST") as answer:
        page.click("button[name=save]")
    assert answer.value.status == 404
    assert not MemberPolicy.objects.exists()
    assert not AuditEntry.objects.filter(action="memberpolicy.change").exists()


@pytest.mark.django_db(transaction=True)
def test_a_browser_signs_in_with_the_login_widgets_answer(
    chromium: Any, live_server: Any, live_bot: FakeTelegramServer
) -> None:
    """Outside Telegram: oauth.telegram.org sends the browser back to /app/ with
    ``#tgAuthResult=<base64 JSON>``; the page posts it and the chats are listed. A forged
    answer leaves the login page with Telegram's refusal."""
    import base64
    import json

    from tests.webapp.helpers import widget_fields

    describe_groups(live_bot)
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    try:
        page = context.new_page()
        forged = dict(widget_fields(settings.TELEGRAM_BOT_TOKEN, CREATOR), hash="0" * 64)
        encoded = base64.urlsafe_b64encode(json.dumps(forged).encode()).decode().rstrip("=")
        page.goto(f"{live_server.url}/app/#tgAuthResult={encoded}")
        page.wait_for_function("document.getElementById('login-status').textContent.length > 10")
        assert "did not confirm" in page.inner_text("#login-status")
        fields = widget_fields(settings.TELEGRAM_BOT_TOKEN, CREATOR)
        encoded = base64.urlsafe_b64encode(json.dumps(fields).encode()).decode().rstrip("=")
        page.goto(f"{live_server.url}/app/?again#tgAuthResult={encoded}")
        page.wait_for_selector("#chats >> text=Test group")
    finally:
        context.close()


@pytest.mark.django_db(transaction=True)
def test_telegrams_back_button_and_theme_change_reach_the_page(
    open_app: Any, live_server: Any, live_bot: FakeTelegramServer
) -> None:
    """Telegram's native clients deliver events through window.Telegram.WebView.receiveEvent:
    the back button leads where the page's back link does; a theme change recolours it."""
    describe_groups(live_bot)
    page = open_app(CREATOR, "en")
    page.wait_for_url(f"{live_server.url}/app/c/{GROUP}/")
    page.click("nav.tabs >> text=Audit log")
    page.wait_for_url(f"{live_server.url}/app/c/{GROUP}/audit/")
    page.evaluate("window.Telegram.WebView.receiveEvent('back_button_pressed', {})")
    page.wait_for_url(f"{live_server.url}/app/c/{GROUP}/")
    page.evaluate(
        "window.Telegram.WebView.receiveEvent('theme_changed',"
        " {theme_params: {bg_color: '#ffffff', text_color: '#000000'}})"
    )
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(255, 255, 255)"
