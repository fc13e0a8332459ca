"""Who sees and changes what: the chat's current Telegram admins, with Telegram's rights; a
demotion between page load and submit refuses the submit. Table-driven over every /app/ URL:
a Mini App session reaches no staff page and no other chat's data."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from community.models import MemberPolicy
from moderation.rules.models import Lock
from telegram_bot.models import AuditEntry
from tests.fakes.telegram import FakeTelegramServer
from tests.webapp.helpers import (
    CREATOR,
    DELETER,
    EDITOR,
    GROUP,
    MEMBER,
    MODERATOR,
    OTHER_GROUP,
    PLAIN_ADMIN,
    describe_groups,
    login,
)

pytestmark = pytest.mark.django_db

CHAT_PAGES = [
    "",
    "welcome/",
    "captcha/",
    "cleaning/",
    "moderation/",
    "rules/",
    "notes/",
    "audit/",
    f"members/{MEMBER}/",
]


@pytest.fixture
def token(bot: FakeTelegramServer, settings: Any) -> str:
    describe_groups(bot)
    return str(settings.TELEGRAM_BOT_TOKEN)


def as_user(token: str, user_id: int) -> Client:
    client = Client()
    assert login(client, token, user_id).status_code == 200
    return client


def test_every_app_url_is_in_the_table() -> None:
    """A new /app/ URL must be added to CHAT_PAGES (or the login set) to be covered here."""
    resolver = get_resolver()
    app = next(
        p for p in resolver.url_patterns if isinstance(p, URLResolver) and str(p.pattern) == "app/"
    )
    names = {p.name for p in app.url_patterns if isinstance(p, URLPattern)}
    assert names == {
        "home",
        "login",
        "login-widget",
        "logout",
        "overview",
        "welcome",
        "captcha",
        "cleaning",
        "moderation",
        "rules",
        "notes",
        "audit",
        "member",
    }
    assert len(CHAT_PAGES) == len(names - {"home", "login", "login-widget", "logout"})


@pytest.mark.parametrize("page", CHAT_PAGES)
def test_a_member_gets_404_for_every_page_and_post_of_the_chat(token: str, page: str) -> None:
    client = as_user(token, MEMBER)
    assert client.get(f"/app/c/{GROUP}/{page}").status_code == 404
    assert client.post(f"/app/c/{GROUP}/{page}", {"welcome_text": "x"}).status_code in (404, 405)


@pytest.mark.parametrize("page", CHAT_PAGES)
def test_an_admin_sees_their_chat_and_no_other(token: str, page: str) -> None:
    client = as_user(token, CREATOR)
    assert client.get(f"/app/c/{GROUP}/{page}").status_code == 200
    # A member of OTHER_GROUP, not its admin; a chat the bot is not in; not a chat id.
    for chat in (OTHER_GROUP, -100999, 5, "x"):
        assert client.get(f"/app/c/{chat}/{page}").status_code == 404
        assert client.post(f"/app/c/{chat}/{page}", {"welcome_text": "x"}).status_code in (404, 405)


@pytest.mark.parametrize(
    "url",
    [
        "/admin/",
        "/admin/community/memberpolicy/",
        "/api/v1/docs",
        "/admin/telegram_bot/auditentry/",
    ],
)
def test_a_mini_app_session_reaches_no_staff_page(token: str, url: str) -> None:
    response = as_user(token, CREATOR).get(url)
    assert response.status_code in (302, 401, 403, 404)
    assert b"Olga" not in response.content


def test_my_chats_lists_only_the_chats_one_administers(token: str) -> None:
    page = as_user(token, CREATOR).get("/app/").content.decode()
    assert "Test group" in page and "Other group" not in page
    assert "Test group" not in as_user(token, MEMBER).get("/app/").content.decode()


def test_the_bots_owner_sees_every_chat(token: str) -> None:
    from tests.conftest import OWNER_ID

    client = as_user(token, OWNER_ID)
    page = client.get("/app/").content.decode()
    assert "Test group" in page and "Other group" in page
    assert client.get(f"/app/c/{OTHER_GROUP}/welcome/").status_code == 200


def test_a_chat_the_bot_left_is_not_shown(token: str) -> None:
    from community.models import BotChat

    BotChat.objects.filter(chat_id=GROUP).update(is_member=False)
    assert as_user(token, CREATOR).get(f"/app/c/{GROUP}/").status_code == 404


def test_rights_follow_telegram(token: str, bot: FakeTelegramServer) -> None:
    """can_change_info for the welcome; can_delete_messages for the locks, as /lock."""
    editor, moderator, plain = (as_user(token, uid) for uid in (EDITOR, MODERATOR, PLAIN_ADMIN))
    deleter = as_user(token, DELETER)
    welcome = {"welcome_enabled": "on", "welcome_text": "Hello {first_name}"}
    assert plain.get(f"/app/c/{GROUP}/welcome/").status_code == 200
    assert b"read-only" in plain.get(f"/app/c/{GROUP}/welcome/").content
    assert plain.post(f"/app/c/{GROUP}/welcome/", welcome).status_code == 403
    assert moderator.post(f"/app/c/{GROUP}/welcome/", welcome).status_code == 403
    assert not MemberPolicy.objects.exists()
    assert editor.post(f"/app/c/{GROUP}/welcome/", welcome).status_code == 200
    assert MemberPolicy.objects.get(chat_id=GROUP).welcome_text == "Hello {first_name}"

    lock = {"do": "lock", "kind": "url", "action": "delete"}
    assert editor.post(f"/app/c/{GROUP}/rules/", lock).status_code == 403
    assert moderator.post(f"/app/c/{GROUP}/rules/", lock).status_code == 403
    assert not Lock.objects.exists()
    assert deleter.post(f"/app/c/{GROUP}/rules/", lock).status_code == 302
    assert Lock.objects.get(chat_id=GROUP).kind == "url"
    entry = AuditEntry.objects.get(action="rules.lock")
    assert (entry.actor_id, entry.source, entry.chat_id) == (DELETER, "miniapp", GROUP)
    settings_entry = AuditEntry.objects.get(action="memberpolicy.change")
    assert settings_entry.actor_id == EDITOR and "welcome_text" in settings_entry.detail


def test_a_demotion_between_load_and_submit_refuses_the_submit(
    token: str, bot: FakeTelegramServer
) -> None:
    client = as_user(token, EDITOR)
    assert client.get(f"/app/c/{GROUP}/welcome/").status_code == 200
    bot.set_chat_member(GROUP, EDITOR, "member", first_name="Ed")
    response = client.post(
        f"/app/c/{GROUP}/welcome/", {"welcome_enabled": "on", "welcome_text": "Hi"}
    )
    assert response.status_code == 404
    assert not MemberPolicy.objects.exists()
    # And the next page load sees it too (the cached list was dropped).
    assert client.get(f"/app/c/{GROUP}/").status_code == 404


def test_a_right_taken_away_before_submit_refuses_it(token: str, bot: FakeTelegramServer) -> None:
    client = as_user(token, DELETER)
    assert b"lock-form" in client.get(f"/app/c/{GROUP}/rules/").content
    bot.set_chat_member(GROUP, DELETER, "administrator", first_name="Del")
    response = client.post(
        f"/app/c/{GROUP}/rules/", {"do": "lock", "kind": "url", "action": "delete"}
    )
    assert response.status_code == 403 and not Lock.objects.exists()


def test_bad_input_is_refused_with_a_clear_error(token: str) -> None:
    editor = as_user(token, EDITOR)
    response = editor.post(
        f"/app/c/{GROUP}/welcome/", {"welcome_enabled": "on", "welcome_text": ""}
    )
    assert response.status_code == 200 and b"errorlist" in response.content
    assert not MemberPolicy.objects.exists()
    deleter = as_user(token, DELETER)
    response = deleter.post(
        f"/app/c/{GROUP}/rules/", {"do": "lock", "kind": "nope", "action": "delete"}
    )
    assert response.status_code == 200 and b"errorlist" in response.content
    assert not Lock.objects.exists()


def test_the_welcome_preview_shows_the_text_without_saving(token: str) -> None:
    editor = as_user(token, EDITOR)
    response = editor.post(
        f"/app/c/{GROUP}/welcome/",
        {"welcome_enabled": "on", "welcome_text": "Hi {first_name} <b>", "preview": "1"},
    )
    page = response.content.decode()
    assert 'id="preview"' in page and "Hi Ann &lt;b&gt;" in page
    assert not MemberPolicy.objects.exists()


def test_member_actions_are_taken_once_and_audited(token: str) -> None:
    from moderation.models import Warning

    client = as_user(token, MODERATOR)
    page = client.get(f"/app/c/{GROUP}/members/{MEMBER}/").content.decode()
    once = page.split('name="once" value="')[1].split('"')[0]
    form = {"action": "warn", "reason": "spam", "once": once}
    assert client.post(f"/app/c/{GROUP}/members/{MEMBER}/", form).status_code == 200
    assert client.post(f"/app/c/{GROUP}/members/{MEMBER}/", form).status_code == 200
    assert Warning.objects.filter(chat_id=GROUP, user_id=MEMBER).count() == 1
    entry = AuditEntry.objects.get(action="warn")
    assert (entry.actor_id, entry.source, entry.target_id) == (MODERATOR, "miniapp", MEMBER)
    assert (
        as_user(token, EDITOR)
        .post(f"/app/c/{GROUP}/members/{MEMBER}/", dict(form, once="b" * 20))
        .status_code
        == 403
    )


def test_cleaning_needs_the_right_to_delete_messages(token: str, bot: FakeTelegramServer) -> None:
    form = {"clean_service_messages": "on"}
    assert as_user(token, MODERATOR).post(f"/app/c/{GROUP}/cleaning/", form).status_code == 403
    assert not MemberPolicy.objects.exists()
    assert as_user(token, DELETER).post(f"/app/c/{GROUP}/cleaning/", form).status_code == 200
    assert MemberPolicy.objects.get(chat_id=GROUP).clean_service_messages


@pytest.mark.parametrize("page", CHAT_PAGES)
def test_only_telegrams_web_client_may_frame_the_app(token: str, page: str) -> None:
    response = as_user(token, CREATOR).get(f"/app/c/{GROUP}/{page}")
    assert "X-Frame-Options" not in response
    assert response["Content-Security-Policy"].startswith(
        "frame-ancestors https://web.telegram.org"
    )
    # The rest of the site keeps its DENY.
    assert Client().get("/admin/login/")["X-Frame-Options"] == "DENY"


def test_changes_are_rate_limited_per_user(token: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from webapp import views

    monkeypatch.setattr(views, "CHANGES_PER_MINUTE", 2)
    client = as_user(token, EDITOR)
    form = {"welcome_enabled": "on", "welcome_text": "Hi"}
    codes = [client.post(f"/app/c/{GROUP}/welcome/", form).status_code for _ in range(3)]
    assert codes == [200, 200, 429]
    # Another admin has their own budget.
    assert as_user(token, CREATOR).post(f"/app/c/{GROUP}/welcome/", form).status_code == 200


def test_notes_and_filters_need_the_right_to_delete_messages(token: str) -> None:
    from moderation.rules.models import Filter, Note

    note = {
        "do": "note",
        "name": "#Rules",
        "text": "Be kind [Site](buttonurl://https://example.org)",
    }
    assert as_user(token, MODERATOR).post(f"/app/c/{GROUP}/notes/", note).status_code == 403
    deleter = as_user(token, DELETER)
    assert deleter.post(f"/app/c/{GROUP}/notes/", note).status_code == 302
    saved = Note.objects.get(chat_id=GROUP)
    assert saved.name == "rules" and saved.text == "Be kind"
    assert saved.buttons == [[{"text": "Site", "url": "https://example.org"}]]
    bad = deleter.post(f"/app/c/{GROUP}/notes/", dict(note, name="no spaces"))
    assert bad.status_code == 200 and b"errorlist" in bad.content
    flt = {"do": "filter", "keyword": "Hello there", "text": "Hi!"}
    assert deleter.post(f"/app/c/{GROUP}/notes/", flt).status_code == 302
    assert Filter.objects.get(chat_id=GROUP).keyword == "hello there"
    assert (
        deleter.post(f"/app/c/{GROUP}/notes/", {"do": "clear", "name": "rules"}).status_code == 302
    )
    assert not Note.objects.exists()
    actions = set(AuditEntry.objects.filter(actor_id=DELETER).values_list("action", flat=True))
    assert actions == {"rules.note", "rules.filter", "rules.clear"}


@pytest.mark.parametrize(
    ("action", "method", "params"),
    [
        ("ban", "banChatMember", {}),
        ("mute", "restrictChatMember", {"permissions": {"can_send_messages": False}}),
        ("unban", "unbanChatMember", {"only_if_banned": True}),
    ],
)
def test_a_member_action_calls_telegram_once_with_the_admin_as_actor(
    token: str, bot: FakeTelegramServer, action: str, method: str, params: dict[str, Any]
) -> None:
    """Queued as the console queues it (a moderation.act job); the job's call reaches the fake
    Bot API once, and the audit entry names the Telegram admin."""
    from telegram_bot.jobs.runner import run_until_idle

    client = as_user(token, MODERATOR)
    page = client.get(f"/app/c/{GROUP}/members/{MEMBER}/").content.decode()
    once = page.split('name="once" value="')[1].split('"')[0]
    form = {"action": action, "reason": "spam", "once": once}
    for _ in range(2):  # a second submit of the same form does nothing
        assert client.post(f"/app/c/{GROUP}/members/{MEMBER}/", form).status_code == 200
    run_until_idle(5.0)
    (call,) = bot.calls_to(method)
    assert call.params["chat_id"] == GROUP and call.params["user_id"] == MEMBER
    for key, value in params.items():
        assert call.params[key] == value or (
            isinstance(value, dict) and value.items() <= call.params[key].items()
        )
    entry = AuditEntry.objects.get(action=action)
    assert (entry.actor_id, entry.source, entry.target_id) == (MODERATOR, "miniapp", MEMBER)
    assert entry.outcome == "done"
