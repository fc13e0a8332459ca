"""The JSON API under /api/v1/stats/ and the CSV export: staff only, documented, validated."""

from __future__ import annotations

import csv
import io
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.test import Client

from stats.models import StatsChat
from tests.builders import make_message_update

GROUP = -100999
TODAY = datetime.now(UTC).date()
RANGE = {"chat_id": GROUP, "start": TODAY - timedelta(days=2), "end": TODAY}


@pytest.fixture
def counted(bot: Any, post_update: Any) -> None:
    now = int(time.time())
    for user_id, text in ((5, "=SUM(A1) hi"), (5, "two words"), (6, "x")):
        update = make_message_update(
            text, chat_id=GROUP, user_id=user_id, chat_type="supergroup", date=now
        )
        update["message"]["from"]["first_name"] = "=cmd" if user_id == 5 else "Bea"
        assert post_update(update)["X-Update-Outcome"] == "processed"


@pytest.mark.django_db
@pytest.mark.parametrize(
    "path", ["chats", "report", "daily", "members", "hours", "coverage", "growth"]
)
def test_it_serves_staff_only(client: Client, path: str) -> None:
    assert client.get(f"/api/v1/stats/{path}", RANGE).status_code == 401


def test_it_documents_every_endpoint_with_its_schema(admin_client: Client) -> None:
    schema = admin_client.get("/api/v1/openapi.json").json()
    paths = {path: spec["get"] for path, spec in schema["paths"].items() if "/stats/" in path}
    assert set(paths) == {
        f"/api/v1/stats/{name}"
        for name in ("chats", "report", "daily", "members", "hours", "coverage", "growth")
    }
    for operation in paths.values():
        assert operation["summary"] and operation["tags"] == ["stats"]
        assert "$ref" in str(operation["responses"]["200"])
    report = schema["components"]["schemas"]["ReportOut"]["properties"]
    assert {"days", "members", "hours", "coverage"} <= set(report)
    day = schema["components"]["schemas"]["DayOut"]["properties"]
    assert "database | live" in day["source"]["description"]


def test_it_reports_today_from_the_live_counters(counted: None, admin_client: Client) -> None:
    body = admin_client.get("/api/v1/stats/report", RANGE).json()
    assert [day["messages"] for day in body["days"]] == [0, 0, 3]
    assert body["days"][-1]["source"] == "live" and body["days"][0]["source"] == "none"
    assert [(m["user_id"], m["messages"], m["words"]) for m in body["members"]] == [
        (5, 2, 4),
        (6, 1, 1),
    ]
    assert sum(body["hours"]["totals"]) == 3
    chats = admin_client.get("/api/v1/stats/chats").json()
    assert chats == [{"chat_id": GROUP, "title": "Test group"}]


def test_it_refuses_a_backwards_or_huge_range(db: None, admin_client: Client) -> None:
    backwards = {**RANGE, "start": TODAY, "end": TODAY - timedelta(days=1)}
    assert admin_client.get("/api/v1/stats/daily", backwards).status_code == 422
    huge = {**RANGE, "start": TODAY - timedelta(days=400)}
    assert admin_client.get("/api/v1/stats/daily", huge).status_code == 422
    assert admin_client.get("/api/v1/stats/daily", {"chat_id": "x"}).status_code == 422


def test_chat_id_0_is_refused_not_read_as_no_chat(counted: None, admin_client: Client) -> None:
    """No Telegram chat has id 0. The dashboard read it as "no chat given" and silently showed
    the most active chat; the CSV export answered an empty file."""
    page = admin_client.get("/admin/stats/", {**RANGE, "chat_id": "0"}, follow=True)
    text = page.content.decode()
    assert "chat_id: not a chat id" in text.lower()
    assert admin_client.get("/api/v1/stats/daily", {**RANGE, "chat_id": 0}).status_code in (
        400,
        422,
    )
    assert admin_client.get("/admin/stats/export.csv", {**RANGE, "chat_id": 0}).status_code == 400


def test_it_exports_the_members_table_as_csv(counted: None, admin_client: Client) -> None:
    response = admin_client.get("/admin/stats/export.csv", RANGE)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert response.content.startswith("\ufeff".encode())  # spreadsheets read it as UTF-8
    rows = list(csv.reader(io.StringIO(response.content.decode("utf-8-sig"))))
    assert rows[0][:5] == ["user_id", "name", "username", "messages", "words"]
    assert [row[:5] for row in rows[1:]] == [
        ["5", "'=cmd", "", "2", "4"],
        ["6", "Bea", "", "1", "1"],
    ]


def test_it_shows_the_dashboard_to_staff_only(
    db: None, client: Client, admin_client: Client
) -> None:
    StatsChat.objects.create(chat_id=GROUP, title="The group")
    assert client.get("/admin/stats/").status_code == 302
    page = admin_client.get("/admin/stats/").content.decode()
    # The chat by its title alone (the id is the option's value, not its text).
    assert '<option value="-100999" selected>The group</option>' in page
    assert "chart.umd.min.js" in page
    assert 'href="/admin/stats/"' in admin_client.get("/admin/").content.decode()
