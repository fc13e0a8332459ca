"""Durations in the settings forms in human units (telegram_bot.ops.durations): typed as 10m,
1d or 1h 30m, shown back the same way, never as a count of seconds; the model's range is said
in units; a bare number is refused rather than guessed."""

from __future__ import annotations

import pytest
from django.test import Client

from moderation.models import ChatSettings

pytestmark = pytest.mark.django_db
URL = "/admin/moderation/chatsettings/add/"
GROUP = -100777


def form(**durations: str) -> dict[str, object]:
    data: dict[str, object] = {
        "chat_id": GROUP,
        "title": "Cats",
        "warn_limit": 3,
        "warn_action": "mute",
        "warn_action_seconds": "1d",
        "warn_expiry_days": 30,
        "flood_action": "mute",
        "flood_messages": 8,
        "flood_seconds": "10s",
        "flood_action_seconds": "10m",
        "violation_low": "none",
        "violation_medium": "none",
        "violation_high": "none",
        "violation_action_seconds": "1h 30m",
    }
    data.update(durations)
    return data


def test_durations_are_typed_and_shown_in_units(admin_client: Client) -> None:
    page = admin_client.get(URL).content.decode()
    assert 'name="warn_action_seconds" value="1d"' in page  # the default, 86400
    assert "(seconds" not in page
    assert admin_client.post(URL, form()).status_code == 302
    row = ChatSettings.objects.get(chat_id=GROUP)
    assert (row.warn_action_seconds, row.violation_action_seconds) == (86400, 5400)
    change = admin_client.get(f"/admin/moderation/chatsettings/{row.pk}/change/").content.decode()
    assert 'value="1h30m"' in change and 'value="10m"' in change


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("90", "not a duration"),
        ("1.5h", "not a duration"),
        ("10s", "At least 30s."),
        ("400d", "At most 366d."),
    ],
)
def test_a_bad_duration_is_refused_in_units(admin_client: Client, value: str, says: str) -> None:
    response = admin_client.post(URL, form(warn_action_seconds=value))
    assert response.status_code == 200
    assert says in response.content.decode()
    assert not ChatSettings.objects.exists()


def test_a_field_counted_in_minutes_takes_whole_minutes(admin_client: Client) -> None:
    url = "/admin/community/memberpolicy/add/"
    data = {
        "chat_id": GROUP,
        "title": "Cats",
        "welcome_text": "",
        "goodbye_text": "",
        "rules_text": "",
        "captcha_seconds": "2m",
        "raid_joins": "10",
        "raid_window_seconds": "1m",
        "raid_strict_minutes": "90s",
        "raid_mode": "requests",
        "spam_action": "ban",
    }
    refused = admin_client.post(url, data).content.decode()
    assert "Give whole minutes, like 15m." in refused
    data["raid_strict_minutes"] = "1h"
    assert admin_client.post(url, data).status_code == 302
    from community.models import MemberPolicy

    assert MemberPolicy.objects.get(chat_id=GROUP).raid_strict_minutes == 60
