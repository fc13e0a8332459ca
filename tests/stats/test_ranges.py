"""Date ranges and ids from the query string: a clear 400 (or the API's 422), never a 500."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

TODAY = datetime.now(UTC).date()
GROUP = -100321
DASHBOARD, EXPORT, API = "/admin/stats/", "/admin/stats/export.csv", "/api/v1/stats/report"


@pytest.mark.parametrize("path", [DASHBOARD, EXPORT])
@pytest.mark.parametrize(
    "query",
    [
        {"end": "0001-01-01"},
        {"start": "0001-01-01", "end": "0001-01-03"},
        {"start": "9999-12-31", "end": "9999-12-31"},
        {"start": TODAY.isoformat(), "end": (TODAY - timedelta(days=1)).isoformat()},
        {"start": (TODAY - timedelta(days=800)).isoformat()},
        {"start": "yesterday"},
        {"end": "2024-02-30"},
    ],
)
def test_the_dashboard_and_the_export_refuse_a_bad_range_with_400(
    db: None, admin_client: Any, path: str, query: dict[str, str]
) -> None:
    response = admin_client.get(path, {"chat_id": GROUP, **query})
    assert response.status_code == 400
    text = response.content.decode()
    assert any(word in text for word in ("range", "date", "day")), text


def test_the_dashboard_says_what_was_wrong_and_shows_the_default_range(
    db: None, admin_client: Any
) -> None:
    response = admin_client.get(DASHBOARD, {"chat_id": GROUP, "end": "0001-01-01"})
    page = response.content.decode()
    assert response.status_code == 400
    assert "between 2000-01-01 and today" in page
    assert f'value="{TODAY.isoformat()}"' in page  # the form falls back to the last 7 days


def test_a_range_ending_after_today_ends_today(db: None, admin_client: Any) -> None:
    future = (TODAY + timedelta(days=30)).isoformat()
    response = admin_client.get(EXPORT, {"chat_id": GROUP, "end": future})
    assert response.status_code == 200
    assert f"_{TODAY.isoformat()}.csv" in response["Content-Disposition"]
    page = admin_client.get(DASHBOARD, {"chat_id": GROUP, "end": future})
    assert page.status_code == 200 and f'data-end="{TODAY.isoformat()}"' in page.content.decode()


@pytest.mark.parametrize(
    "query",
    [
        {"start": "0001-01-01", "end": "0001-01-01"},
        {"start": "9999-12-31", "end": "9999-12-31"},
        {"start": TODAY.isoformat(), "end": TODAY.isoformat(), "chat_id": str(2**70)},
    ],
)
def test_the_api_refuses_a_bad_range_with_422(
    db: None, admin_client: Any, query: dict[str, str]
) -> None:
    response = admin_client.get(API, {"chat_id": GROUP, **query})
    assert response.status_code == 422


TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=30)
DATEISH = st.one_of(
    TEXT,
    st.dates(min_value=date(1, 1, 1), max_value=date(9999, 12, 31)).map(date.isoformat),
    st.integers(min_value=-(10**25), max_value=10**25).map(str),
)
IDS = st.one_of(TEXT, st.integers(min_value=-(10**25), max_value=10**25).map(str))


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    path=st.sampled_from([DASHBOARD, EXPORT, API]),
    chat_id=st.one_of(st.none(), IDS),
    start=st.one_of(st.none(), DATEISH),
    end=st.one_of(st.none(), DATEISH),
    limit=st.one_of(st.none(), IDS),
)
@example(path=DASHBOARD, chat_id=None, start=None, end="0001-01-01", limit=None)
@example(path=EXPORT, chat_id=str(GROUP), start=None, end="0001-01-01", limit=None)
@example(path=EXPORT, chat_id=str(2**64), start=None, end=None, limit=None)
@example(path=DASHBOARD, chat_id="0", start="2000-01-01", end="2000-01-01", limit=None)
def test_no_query_string_makes_a_stats_page_fail(
    db: None,
    admin_client: Any,
    path: str,
    chat_id: str | None,
    start: str | None,
    end: str | None,
    limit: str | None,
) -> None:
    params = {
        name: value
        for name, value in (("chat_id", chat_id), ("start", start), ("end", end), ("limit", limit))
        if value is not None
    }
    response = admin_client.get(path, params)
    assert response.status_code < 500
    if response.status_code >= 400:
        assert response.status_code in (400, 422)
