"""Retention cohorts at once (``/api/v1/community/retention/weeks``, the statistics
dashboard's chart): the last weeks' cohorts oldest first, each week ``/retention``'s figures,
null until they can be known; bounded and validated; for staff with the growth permission;
the dashboard draws them only for a user who may read them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.utils import timezone

from community.models import MemberMovement

pytestmark = pytest.mark.django_db
CHAT = -1001111111111
URL = "/api/v1/community/retention/weeks"


def move(user_id: int, kind: str, at: datetime) -> None:
    MemberMovement.objects.create(
        chat_id=CHAT, user_id=user_id, stay=f"{user_id}:{kind}", kind=kind, at=at, day=at.date()
    )


def test_the_weeks_cohorts_come_oldest_first_with_what_can_be_known(admin_client: Client) -> None:
    today = timezone.now().astimezone(UTC).date()
    monday = today - timedelta(days=today.weekday())
    week = datetime.combine(monday - timedelta(weeks=6), datetime.min.time(), UTC)
    for user_id in (1, 2, 3):
        move(user_id, "join", week + timedelta(days=1, hours=user_id))
    move(2, "leave", week + timedelta(days=3))  # within 7 days of the join
    move(3, "leave", week + timedelta(days=20))  # after 7, within 30
    move(9, "join", datetime.combine(monday, datetime.min.time(), UTC))  # this week
    response = admin_client.get(URL, {"chat_id": CHAT, "weeks": 7})
    assert response.status_code == 200
    weeks = response.json()
    assert [w["week_start"] for w in weeks] == [
        (monday - timedelta(weeks=n)).isoformat() for n in range(6, -1, -1)
    ]
    oldest, latest = weeks[0], weeks[-1]
    assert (oldest["joined"], oldest["still_members_after_7_days"]) == (3, 2)
    assert oldest["still_members_after_30_days"] == 1
    assert latest["joined"] == 1 and latest["still_members_after_7_days"] is None
    assert all(w["joined"] == 0 for w in weeks[1:-1])


@pytest.mark.parametrize("query", [{"weeks": 27}, {"weeks": 0}, {"chat_id": 5}, {"chat_id": "x"}])
def test_a_bad_query_is_refused(admin_client: Client, query: dict[str, object]) -> None:
    assert admin_client.get(URL, {"chat_id": CHAT, **query}).status_code == 422


def test_the_dashboard_draws_cohorts_for_who_may_read_them(
    admin_client: Client, client: Client
) -> None:
    page = admin_client.get("/admin/stats/").content.decode()
    assert f'data-cohorts-url="{URL}"' in page and 'id="cohorts-chart"' in page
    user = User.objects.create_user("viewer", password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_dailyuserstat"))
    client.force_login(user)
    page = client.get("/admin/stats/").content.decode()
    assert 'data-cohorts-url=""' in page and 'id="cohorts-chart"' not in page
    assert client.get(URL, {"chat_id": CHAT}).status_code in (401, 403)
