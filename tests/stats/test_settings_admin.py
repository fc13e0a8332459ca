"""The statistics settings are one object in the admin site: the list leads to its form."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from stats.config import counting_config
from stats.models import StatsSettings

pytestmark = pytest.mark.django_db
FORM = "/admin/stats/statssettings/1/change/"


def test_the_list_opens_the_one_settings_form_with_the_defaults(admin_client: Client) -> None:
    response = admin_client.get("/admin/stats/statssettings/")
    assert (response.status_code, response["Location"]) == (302, FORM)
    page = admin_client.get(FORM).content.decode()
    assert 'name="new_member_days" value="3"' in page
    assert "0 statistics settings" not in page
    assert admin_client.get("/admin/stats/statssettings/add/").status_code == 403
    assert admin_client.get("/admin/stats/statssettings/2/change/").status_code == 302


def test_saving_the_form_creates_then_changes_the_one_row(admin_client: Client) -> None:
    data = {"profanity_enabled": "on", "new_member_days": "5", "extra_profanity": "frak"}
    assert admin_client.post(FORM, data).status_code == 302
    assert counting_config().new_member_days == 5
    data["new_member_days"] = "7"
    assert admin_client.post(FORM, data).status_code == 302
    assert list(StatsSettings.objects.values_list("pk", "new_member_days")) == [(1, 7)]
    assert counting_config().new_member_days == 7  # the cache was cleared
    bad = admin_client.post(FORM, {**data, "new_member_days": "-1"})
    assert bad.status_code == 200 and StatsSettings.objects.get().new_member_days == 7


def test_a_user_without_permission_is_refused(django_user_model: Any) -> None:
    user = django_user_model.objects.create_user("v", password="pw", is_staff=True)
    client = Client()
    client.force_login(user)
    assert client.get("/admin/stats/statssettings/").status_code == 403
    user.user_permissions.add(Permission.objects.get(codename="view_statssettings"))
    client.force_login(django_user_model.objects.get(pk=user.pk))
    assert client.get("/admin/stats/statssettings/").status_code == 302
    assert client.get(FORM).status_code == 200
    assert client.post(FORM, {"new_member_days": "9"}).status_code == 403
