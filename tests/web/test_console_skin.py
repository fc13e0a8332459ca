"""The console in django-unfold's skin: every admin class is unfold's (its templates expect
them), the auth admin's forms are unfold's and still work, and unfold's search answers staff
only."""

from __future__ import annotations

from typing import Any

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.auth.models import User
from django.test import Client
from unfold.admin import ModelAdmin, StackedInline, TabularInline

from telegram_bot.models import AuditEntry

pytestmark = pytest.mark.django_db


def test_every_registered_admin_and_inline_is_unfolds() -> None:
    registered = [model for model in apps.get_models() if admin.site.is_registered(model)]
    assert len(registered) > 20
    for model in registered:
        model_admin = admin.site.get_model_admin(model)
        assert isinstance(model_admin, ModelAdmin), model
        for inline in model_admin.inlines:
            assert issubclass(inline, (TabularInline, StackedInline)), inline


def test_the_site_is_unfolds_with_the_console_sidebar(admin_client: Client) -> None:
    page = admin_client.get("/admin/").content.decode()
    assert "/static/unfold/css/styles.css" in page
    assert "/static/telegram_bot/console.css" in page
    assert 'id="nav-sidebar-apps"' in page and 'id="time-zone-note"' in page


def test_an_operator_adds_a_user_and_sets_a_password_with_unfolds_forms(
    admin_client: Client,
) -> None:
    response = admin_client.post(
        "/admin/auth/user/add/",
        {
            "username": "anna",
            "usable_password": "true",
            "password1": "a-long-pass-phrase-42",
            "password2": "a-long-pass-phrase-42",
            "_save": "Save",
        },
    )
    assert response.status_code == 302, response.content.decode()[-2000:]
    anna = User.objects.get(username="anna")
    assert anna.check_password("a-long-pass-phrase-42")
    assert AuditEntry.objects.filter(action="user.add", target_name__contains="anna").exists()
    page = admin_client.get(f"/admin/auth/user/{anna.pk}/change/").content.decode()
    assert 'name="username"' in page and "anna" in page
    response = admin_client.post(
        f"/admin/auth/user/{anna.pk}/password/",
        {"password1": "another-pass-phrase-43", "password2": "another-pass-phrase-43"},
    )
    assert response.status_code == 302
    anna.refresh_from_db()
    assert anna.check_password("another-pass-phrase-43")


def test_unfolds_search_answers_staff_only(admin_client: Client, client: Client) -> None:
    found = admin_client.get("/admin/search/", {"s": "tick"}).content.decode()
    assert "/admin/support/ticket/" in found
    assert client.get("/admin/search/", {"s": "tick"}).status_code == 302  # to the login


def test_the_sections_are_built_once_a_request(admin_client: Client) -> None:
    """The start page, Django's available_apps and unfold's sidebar share one build."""
    from unittest import mock

    from telegram_bot.ops.admin_site import OperatorsAdminSite

    with mock.patch.object(
        OperatorsAdminSite, "_sections", autospec=True, side_effect=OperatorsAdminSite._sections
    ) as build:
        page = admin_client.get("/admin/").content.decode()
    assert build.call_count == 1
    assert page.count('href="/admin/support/ticket/"') >= 2  # the sidebar and the start page


def test_unfolds_own_words_are_in_russian(admin_client: Client) -> None:
    """unfold 0.91 has no Russian catalogue: ours translates its strings
    (telegram_bot/ops/unfold_strings.py)."""
    page = admin_client.get("/admin/content/post/add/", HTTP_ACCEPT_LANGUAGE="ru")
    text = page.content.decode()
    assert "Поиск по разделам..." in text and "Search apps and models" not in text
    assert "Выберите файл" in text and "Choose file to upload" not in text


@pytest.mark.parametrize(
    ("query", "landing"), [("", "/admin/"), ("?next=/admin/content/post/", "/admin/content/post/")]
)
def test_a_login_lands_on_the_console_or_the_page_asked_for(
    client: Client, django_user_model: Any, query: str, landing: str
) -> None:
    """unfold's login form carries no "next" field: without one the console's start page
    (LOGIN_REDIRECT_URL, not Django's /accounts/profile/); a link's "next" stays in the form's
    address."""
    django_user_model.objects.create_superuser("anna", "a@example.org", "a-long-pass-phrase-42")
    page = client.get(f"/admin/login/{query}").content.decode()
    assert f'action="/admin/login/{query}"' in page
    response = client.post(
        f"/admin/login/{query}", {"username": "anna", "password": "a-long-pass-phrase-42"}
    )
    assert response.status_code == 302 and response["Location"] == landing
