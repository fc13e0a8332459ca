"""The console's navigation (telegram_bot.ops.navigation): the start page and the sidebar are
grouped as an operator works, with the engineers' tables last, and list only what the user may
open."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from telegram_bot.ops.navigation import grouped

pytestmark = pytest.mark.django_db


def sections(client: Client, url: str = "/admin/") -> dict[str, list[str]]:
    response = client.get(url)
    apps = response.context["app_list" if url == "/admin/" else "available_apps"]
    return {str(app["name"]): [str(row["name"]) for row in app["models"]] for app in apps}


def test_the_start_page_is_grouped_as_an_operator_works(admin_client: Client) -> None:
    found = sections(admin_client)
    assert list(found)[:6] == [
        "Community and members",
        "Moderation",
        "Support",
        "Posts",
        "Statistics",
        "Settings",
    ]
    assert list(found)[-1] == "System"
    assert found["Statistics"] == ["Today by chat", "Statistics"]
    assert "Dead letters" in found["System"] and "Jobs" in found["System"]
    assert "Tickets" in found["Support"] and "Posts" in found["Posts"]
    assert "Daily user aggregates" not in found["Statistics"]
    page = admin_client.get("/admin/").content.decode()
    assert page.index("Community and members") < page.index("System")
    # The sidebar of every page is the same grouping.
    assert list(sections(admin_client, "/admin/content/post/")) == list(found)


def test_a_user_sees_only_what_they_may_open(client: Client, django_user_model: Any) -> None:
    user = django_user_model.objects.create_user("writer", password="pw-x-12345", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_post"))
    client.force_login(user)
    assert sections(client) == {"Posts": ["Posts"]}


def test_a_model_no_section_names_keeps_its_apps_group() -> None:
    apps = [
        {
            "name": "Notes",
            "app_label": "notes",
            "app_url": "/admin/notes/",
            "models": [{"name": "Notes", "object_name": "Note", "admin_url": "/admin/notes/note/"}],
        },
        {
            "name": "Posts",
            "app_label": "content",
            "app_url": "/admin/content/",
            "models": [
                {"name": "Posts", "object_name": "Post", "admin_url": "/admin/content/post/"}
            ],
        },
    ]
    result = grouped(apps, {})
    assert [str(app["name"]) for app in result] == ["Posts", "Notes"]
    assert result[0]["app_url"] == "/admin/content/post/"


def test_the_sections_are_named_in_russian(admin_client: Client) -> None:
    page = admin_client.get("/admin/", HTTP_ACCEPT_LANGUAGE="ru").content.decode()
    for title in ("Сообщество и участники", "Модерация", "Посты", "Настройки", "Система"):
        assert title in page, title


def test_a_feature_places_its_pages_in_a_section_from_its_app_config() -> None:
    """The core names no feature: a feature's ``console_sections`` put its models in a section
    (before the core's own entries, after them in System)."""
    apps = [
        {
            "name": "Rules",
            "app_label": "rules",
            "app_url": "/admin/rules/",
            "models": [{"name": "Locks", "object_name": "Lock", "admin_url": "/admin/rules/lock/"}],
        },
        {
            "name": "Telegram bot",
            "app_label": "telegram_bot",
            "app_url": "/admin/telegram_bot/",
            "models": [
                {"name": "Jobs", "object_name": "Job", "admin_url": "/admin/telegram_bot/job/"},
                {"name": "Audit", "object_name": "AuditEntry", "admin_url": "/x/"},
            ],
        },
    ]
    result = grouped(apps, {}, {"safety": ["rules.lock"], "system": ["rules.lock"]})
    by_name = {str(app["name"]): [str(row["name"]) for row in app["models"]] for app in result}
    assert by_name == {"Moderation": ["Locks", "Audit"], "System": ["Jobs"]}


def test_the_shipped_features_fill_the_sections(settings: Any) -> None:
    from telegram_bot import features

    placed = features.console_sections()
    assert "support.ticket" in placed["desk"] and "content.post" in placed["posts"]
    settings.FEATURES_DISABLED = ["support"]
    assert "desk" not in features.console_sections()


def sidebar_of(client: Client, url: str = "/admin/") -> dict[str, list[tuple[str, str]]]:
    """unfold's sidebar as the page's context holds it: group title -> (link title, link)."""
    groups = client.get(url).context["sidebar_navigation"]
    return {
        str(group["title"]): [(str(item["title"]), str(item["link"])) for item in group["items"]]
        for group in groups
    }


def test_unfolds_sidebar_is_the_console_sections_after_today(admin_client: Client) -> None:
    found = sidebar_of(admin_client, "/admin/content/post/")
    assert list(found) == ["Today", *sections(admin_client)]
    assert found["Today"] == [("Overview", "/admin/")]
    assert ("Statistics", "/admin/stats/") in found["Statistics"]
    assert ("Posts", "/admin/content/post/") in found["Posts"]
    page = admin_client.get("/admin/content/post/").content.decode()
    assert 'id="nav-sidebar"' in page and 'href="/admin/support/ticket/"' in page


def test_the_sidebar_lists_only_what_the_user_may_open(
    client: Client, django_user_model: Any
) -> None:
    user = django_user_model.objects.create_user("writer", password="pw-x-12345", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_post"))
    client.force_login(user)
    assert sidebar_of(client) == {
        "Today": [("Overview", "/admin/")],
        "Posts": [("Posts", "/admin/content/post/")],
    }
    page = client.get("/admin/content/post/").content.decode()
    assert "/admin/support/ticket/" not in page and "/admin/auth/user/" not in page


def test_the_system_group_folds_and_titles_are_escaped(rf: Any, admin_user: Any) -> None:
    from unittest import mock

    from django.contrib import admin

    from telegram_bot.ops import navigation

    request = rf.get("/admin/")
    request.user = admin_user
    apps = [
        {
            "name": "<b>Notes</b>",
            "app_label": "notes",
            "models": [{"name": "<i>Note</i>", "admin_url": "/admin/notes/note/"}],
        },
        {
            "name": "System",
            "app_label": "section-system",
            "models": [{"name": "Jobs", "admin_url": "/admin/telegram_bot/job/"}],
        },
    ]
    with mock.patch.object(admin.site, "get_app_list", return_value=apps):
        groups = navigation.sidebar(request)
    assert [str(group["title"]) for group in groups] == [
        "Today",
        "&lt;b&gt;Notes&lt;/b&gt;",
        "System",
    ]
    assert groups[1]["items"] == [
        {"title": "&lt;i&gt;Note&lt;/i&gt;", "link": "/admin/notes/note/"}
    ]
    assert [group.get("collapsible", False) for group in groups] == [False, False, True]


def test_the_sidebar_is_in_russian(admin_client: Client) -> None:
    page = admin_client.get("/admin/content/post/", HTTP_ACCEPT_LANGUAGE="ru").content.decode()
    for title in ("Сегодня", "Обзор", "Сообщество и участники", "Система"):
        assert title in page, title
