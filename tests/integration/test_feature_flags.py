"""FEATURES_DISABLED: a feature switched off answers nothing and shows nothing, without a code
change; the others, and the core, carry on."""

from __future__ import annotations

import types
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import Client, override_settings
from django.urls import path
from django_q.models import Schedule

from config.api import build_api
from support.models import Ticket
from telegram_bot import features
from telegram_bot.pipeline import router as router_module
from telegram_bot.scheduling import schedules_sync
from telegram_bot.state import KVStore
from tests.builders import make_callback_update, make_message_update
from tests.conftest import OWNER_ID
from tests.fakes.telegram import FakeTelegramServer

pytestmark = pytest.mark.django_db
GROUP = -100555
USER = 4242


@pytest.fixture(autouse=True)
def _fresh_router() -> Iterator[None]:
    """The router is built once per process, from the features enabled then."""
    router_module._router = None
    yield
    router_module._router = None


def disabled(*labels: str) -> Any:
    return override_settings(FEATURES_DISABLED=list(labels))


def texts_to(bot: FakeTelegramServer, chat_id: int) -> list[str]:
    return [c.params["text"] for c in bot.calls_to("sendMessage") if c.params["chat_id"] == chat_id]


def staff_client(django_user_model: Any) -> Client:
    client = Client()
    client.force_login(django_user_model.objects.create_superuser("op", "op@example.org", "pw"))
    return client


# --- answers nothing ---------------------------------------------------------------------------
def test_a_disabled_features_command_falls_to_the_unknown_command_answer(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    with disabled("support", "content"):
        post_update(make_message_update("/support my order is late", chat_id=USER, user_id=USER))
    assert texts_to(bot, USER) == ["I don't know that command. Send /help for the list."]
    assert not Ticket.objects.exists()
    router_module._router = None
    post_update(make_message_update("/support my order is late", chat_id=USER, user_id=USER))
    assert Ticket.objects.count() == 1  # enabled again: the same command opens a ticket


def test_a_disabled_features_observer_does_not_run(
    bot: FakeTelegramServer, post_update: Any, memory_store: KVStore
) -> None:
    with disabled("stats"):
        post_update(make_message_update("counted?", chat_id=GROUP, user_id=USER))
        assert list(memory_store.scan_all("stats:")) == []
        assert list(memory_store.scan_all("msg:")) == []
        post_update(make_message_update("/stats", chat_id=GROUP, user_id=USER))
    assert texts_to(bot, GROUP) == []  # in a group an unknown command is not answered
    router_module._router = None
    post_update(make_message_update("counted!", chat_id=GROUP, user_id=USER))
    assert list(memory_store.scan_all("stats:")) != []


def test_a_disabled_features_buttons_and_panel_entries_are_gone(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    with disabled("support", "content"):
        post_update(make_message_update("/panel", chat_id=OWNER_ID, user_id=OWNER_ID))
        keyboard = bot.calls_to("sendMessage")[-1].params["reply_markup"]["inline_keyboard"]
        buttons = {row[0]["callback_data"] for row in keyboard}
        assert "panel:admins" in buttons
        assert not {"sup:list:1", "content:list:0"} & buttons
        # A button of it sent earlier: no route takes it.
        pressed = post_update(make_callback_update("content:list:0", user_id=OWNER_ID))
        assert pressed["X-Update-Outcome"] == "ignored"
        assert [call.method for call in bot.calls] == ["sendMessage"]


# --- shows nothing: /start and /help ------------------------------------------------------------
def test_start_and_help_stop_mentioning_a_disabled_feature(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    with disabled("support", "stats"):
        post_update(make_message_update("/start", chat_id=USER, user_id=USER))
        post_update(make_message_update("/help", chat_id=USER, user_id=USER))
    start, help_text = texts_to(bot, USER)
    assert start.startswith("Hello! I run this community: members (join requests, welcome, ")
    assert "support" not in start and "statistics" not in start
    assert "/support" not in help_text and "/close" not in help_text
    assert "/stats" not in help_text and "/start" in help_text
    router_module._router = None
    post_update(make_message_update("/help", chat_id=USER + 1, user_id=USER + 1))
    assert "/support" in texts_to(bot, USER + 1)[0]


# --- shows nothing: schedules ------------------------------------------------------------------
def test_sync_schedules_removes_and_then_restores_a_disabled_features_schedules() -> None:
    schedules_sync()
    names = set(Schedule.objects.values_list("name", flat=True))
    assert {"tgcp.stats_backfill", "tgcp.content_reconcile", "tgcp.jobs_tick"} <= names
    with disabled("stats", "content"):
        changes = schedules_sync()
    names = set(Schedule.objects.values_list("name", flat=True))
    assert "tgcp.jobs_tick" in names
    assert not any(name.startswith(("tgcp.stats_", "tgcp.content_")) for name in names)
    assert {"stats_backfill", "content_reconcile"} <= set(changes["deleted"])
    assert {"stats_backfill", "content_reconcile"} <= set(schedules_sync()["created"])


# --- shows nothing: the admin site -------------------------------------------------------------
def test_the_admin_site_neither_lists_nor_serves_a_disabled_feature(
    django_user_model: Any, memory_store: KVStore
) -> None:
    client = staff_client(django_user_model)
    ticket_list, dashboard = "/admin/support/ticket/", "/admin/stats/"
    assert client.get(ticket_list).status_code == 200
    assert client.get(dashboard).status_code == 200
    with disabled("support", "stats"):
        index = client.get("/admin/")
        listed = {row["admin_url"] for app in index.context["app_list"] for row in app["models"]}
        assert not any(url.startswith(("/admin/support/", "/admin/stats/")) for url in listed)
        for url in ("/admin/community/", "/admin/content/", "/admin/telegram_bot/"):
            assert any(listed_url.startswith(url) for listed_url in listed), url
        cards = {card.key for card in index.context["overview_cards"]}
        assert "open-tickets" not in cards and "messages-today" not in cards
        assert "posts-today" in cards
        for url in (ticket_list, "/admin/support/", "/admin/support/ticket/1/change/", dashboard):
            assert client.get(url).status_code == 404, url
        assert client.get("/admin/content/post/").status_code == 200
        nav = client.get("/admin/content/post/").context["available_apps"]
        in_nav = {row["admin_url"] for app in nav for row in app["models"]}
        assert not any(url.startswith("/admin/support/") for url in in_nav)


# --- shows nothing: the API --------------------------------------------------------------------
def test_a_disabled_features_api_routes_are_not_mounted(django_user_model: Any) -> None:
    with disabled("stats", "community"):
        api = build_api()
        urls = types.ModuleType("flagged_urls")
        urls.urlpatterns = [path("api/v1/", api.urls)]  # type: ignore[attr-defined]
        paths = set(api.get_openapi_schema()["paths"])
        with override_settings(ROOT_URLCONF=urls):
            client = staff_client(django_user_model)
            assert client.get("/api/v1/stats/chats").status_code == 404
            assert client.get("/api/v1/community/growth?chat_id=-1").status_code == 404
    assert not any(p.startswith(("/api/v1/stats/", "/api/v1/community/")) for p in paths)
    assert any(p.startswith("/api/v1/stats/") for p in build_api().get_openapi_schema()["paths"])


# --- the registry ------------------------------------------------------------------------------
def test_what_holds_of_a_disabled_features_data_stays_on() -> None:
    with disabled("support"):
        assert "support" not in [config.label for config in features.enabled_feature_configs()]
        # Privacy hooks, chat migration and queued jobs still see it.
        assert "support" in [config.label for config in features.feature_configs()]
        kinds = {kind for declared in features.job_handler_maps() for kind in declared}
        assert "support.deliver" in kinds


def test_an_unknown_or_core_label_is_refused() -> None:
    for bad in ("tickets", "telegram_bot"):
        with disabled(bad), pytest.raises(ImproperlyConfigured, match="the features are"):
            features.enabled_feature_configs()
