"""One rule for growth figures (joins, leaves, member counts): whoever shows them, the user
needs ``community.view_membermovement``, the permission of the rows they come from. The
statistics routes also need the statistics permission, as all of them do. One row per route
and role."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from django.apps import apps
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.utils import timezone

from community.growth import movement_record
from telegram_bot.insights import Growth

pytestmark = pytest.mark.django_db

CHAT = -1001234567890
STATS = "stats.view_dailyuserstat"
GROWTH = "community.view_membermovement"
ROLES: dict[str, tuple[str, ...] | None] = {
    "anonymous": None,
    "staff": (),
    "stats only": (STATS,),
    "growth only": (GROWTH,),
    "stats and growth": (STATS, GROWTH),
    "superuser": ("*",),
}


def query() -> str:
    today = timezone.now().astimezone(UTC).date()
    return f"?chat_id={CHAT}&start={today}&end={today}"


# route -> role -> (status, whether the answer holds the joins)
TABLE: dict[str, dict[str, tuple[int, bool]]] = {
    "/api/v1/stats/growth": {
        "anonymous": (401, False),
        "staff": (403, False),
        "stats only": (403, False),
        "growth only": (403, False),
        "stats and growth": (200, True),
        "superuser": (200, True),
    },
    "/api/v1/stats/report": {
        "anonymous": (401, False),
        "staff": (403, False),
        "stats only": (200, False),  # the activity, without the growth
        "growth only": (403, False),
        "stats and growth": (200, True),
        "superuser": (200, True),
    },
    "/api/v1/community/growth": {
        "anonymous": (401, False),
        "staff": (403, False),
        "stats only": (403, False),
        "growth only": (200, True),
        "stats and growth": (200, True),
        "superuser": (200, True),
    },
}


def client_for(role: str) -> Client:
    client = Client()
    perms = ROLES[role]
    if perms is None:
        return client
    user = User.objects.create_user(
        f"u{abs(hash(role))}", password="pw", is_staff=True, is_superuser=perms == ("*",)
    )
    for name in perms if perms != ("*",) else ():
        app, codename = name.split(".")
        user.user_permissions.add(
            Permission.objects.get(content_type__app_label=app, codename=codename)
        )
    client.force_login(user)
    return client


def joins_in(route: str, body: Any) -> int | None:
    """The joins the answer shows (None: none shown)."""
    if route.endswith("/report"):
        if not body["growth"]["available"]:
            assert body["totals"]["joins"] is None and body["growth"]["days"] == []
            return None
        return int(body["totals"]["joins"])
    days = body["days"]
    return sum(day["joins"] for day in days)


@pytest.mark.parametrize("route", sorted(TABLE))
@pytest.mark.parametrize("role", sorted(ROLES))
def test_growth_figures_follow_one_permission(route: str, role: str) -> None:
    movement_record(
        chat_id=CHAT,
        user_id=4242,
        stay="s1",
        kind="join",
        date_unix=int(datetime.now(tz=UTC).timestamp()),
    )
    status, shows_joins = TABLE[route][role]
    response = client_for(role).get(route + query())
    assert response.status_code == status, response.content
    if status != 200:
        return
    body = response.json()
    assert joins_in(route, body) == (1 if shows_joins else None)
    if route.endswith("/report") and not shows_joins:
        assert body["growth"]["permitted"] is False


def test_the_dashboard_says_why_growth_is_missing_for_a_stats_only_user() -> None:
    response = client_for("stats only").get("/admin/stats/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "view member movement" in page
    assert "not installed" not in page


def test_a_provider_that_names_no_permission_shows_growth_to_nobody(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(apps.get_app_config("community"), "insight_growth", f"{__name__}.UNGUARDED")
    client = client_for("superuser")
    assert client.get("/api/v1/stats/growth" + query()).status_code == 403
    body = client.get("/api/v1/stats/report" + query()).json()
    assert body["growth"] == {"available": False, "permitted": False, "days": []}


def _no_days(chat_id: int, start: Any, end: Any, *, zone: Any = None) -> list[Any]:
    return []


UNGUARDED = Growth(days=_no_days, permission="")  # a provider that names no permission
