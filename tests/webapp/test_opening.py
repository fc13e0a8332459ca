"""Opening the Mini App from the bot: /settings in a group answers its admin with a
t.me/<bot>?startapp=<chat> button; set_menu_button sets a web_app menu button."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from tests.builders import make_message_update
from tests.fakes.telegram import FakeTelegramServer
from tests.webapp.helpers import EDITOR, GROUP, MEMBER, describe_groups

pytestmark = pytest.mark.django_db
URL = "https://bot.example.org/app"


@pytest.fixture
def described(bot: FakeTelegramServer, settings: Any) -> FakeTelegramServer:
    describe_groups(bot)
    settings.MINIAPP_PUBLIC_URL = URL
    return bot


def _answers(bot: FakeTelegramServer) -> list[dict[str, Any]]:
    return [call.params for call in bot.calls_to("sendMessage")]


def test_settings_answers_an_admin_with_a_startapp_link(
    described: FakeTelegramServer, post_update: Any
) -> None:
    update = make_message_update("/settings", chat_id=GROUP, user_id=EDITOR)
    assert post_update(update).status_code == 200
    (answer,) = _answers(described)
    button = answer["reply_markup"]["inline_keyboard"][0][0]
    assert button["url"] == f"https://t.me/fake_bot?startapp={GROUP}"


def test_settings_refuses_a_member(described: FakeTelegramServer, post_update: Any) -> None:
    post_update(make_message_update("/settings", chat_id=GROUP, user_id=MEMBER))
    (answer,) = _answers(described)
    assert "reply_markup" not in answer and "admins" in answer["text"]


def test_set_menu_button_sets_a_web_app_button(described: FakeTelegramServer) -> None:
    call_command("set_menu_button", "--text", "Settings", stdout=StringIO())
    (call,) = described.calls_to("setChatMenuButton")
    assert call.params["menu_button"] == {
        "type": "web_app",
        "text": "Settings",
        "web_app": {"url": URL},
    }


def test_set_menu_button_needs_the_public_url(bot: FakeTelegramServer, settings: Any) -> None:
    settings.MINIAPP_PUBLIC_URL = ""
    with pytest.raises(CommandError, match="MINIAPP_PUBLIC_URL"):
        call_command("set_menu_button", stdout=StringIO())
    assert not bot.calls_to("setChatMenuButton")


def test_the_public_url_setting_is_validated(monkeypatch: pytest.MonkeyPatch) -> None:
    from config.env import ConfigError, read_environment

    for bad in ("http://bot.example.org/app", "https://bot.example.org/app?x=1", "nonsense"):
        monkeypatch.setenv("MINIAPP_PUBLIC_URL", bad)
        with pytest.raises(ConfigError, match="MINIAPP_PUBLIC_URL"):
            read_environment()
    monkeypatch.setenv("MINIAPP_PUBLIC_URL", URL + "/")
    assert read_environment().MINIAPP_PUBLIC_URL == URL


def test_check_refuses_a_public_url_this_site_does_not_serve(settings: Any) -> None:
    from webapp.checks import public_url_served

    settings.MINIAPP_PUBLIC_URL = URL
    settings.ALLOWED_HOSTS = ["other.example.org"]
    (error,) = public_url_served()
    assert error.id == "webapp.E001" and "bot.example.org" in error.msg
    settings.ALLOWED_HOSTS = ["bot.example.org"]
    assert public_url_served() == []
    settings.MINIAPP_PUBLIC_URL = ""
    assert public_url_served() == []


def test_check_reads_allowed_hosts_patterns(settings: Any) -> None:
    from webapp.checks import public_url_served

    settings.MINIAPP_PUBLIC_URL = URL
    for allowed, ok in (
        (["*"], True),
        ([".example.org"], True),
        ([".bot.example.org"], True),
        ([".other.org"], False),
        (["example.org"], False),
    ):
        settings.ALLOWED_HOSTS = allowed
        assert (public_url_served() == []) is ok, allowed
