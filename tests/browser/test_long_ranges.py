"""The dashboard over long ranges in a real Chromium: quick ranges of 7, 30, 90 and 365 days,
and days grouped into weeks or months (automatically by the range's length, or as chosen), with
the sums kept."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from stats.models import DailyUserStat, StatsChat
from tests.fakes.telegram import FakeTelegramServer

CHAT = -100616161


def labels_and_total(page: Any) -> tuple[list[str], int]:
    labels = page.evaluate("window.statsDashboard.chart.data.labels")
    bars = page.evaluate("window.statsDashboard.chart.data.datasets[0].data")
    return labels, sum(bars)


@pytest.mark.django_db(transaction=True)
def test_a_year_is_drawn_by_month_and_can_be_drawn_by_week(
    admin_page: Any, live_server: Any, live_bot: FakeTelegramServer
) -> None:
    today = datetime.now(UTC).date()
    StatsChat.objects.create(chat_id=CHAT, title="Year-long chat")
    DailyUserStat.objects.bulk_create(
        DailyUserStat(
            chat_id=CHAT, day=today - timedelta(days=back), user_id=7, message_count=1 + back % 5
        )
        for back in range(365)
    )
    year_total = sum(1 + back % 5 for back in range(365))
    page = admin_page
    page.goto(f"{live_server.url}/admin/stats/?chat_id={CHAT}")
    page.wait_for_selector("#stats-dashboard[data-loaded=true]")
    assert page.evaluate("window.statsDashboard.grouping") == "day"  # the default week

    page.click("#stats-quick a[data-days='365']")
    page.wait_for_selector("#stats-dashboard[data-loaded=true]")
    assert page.locator("#stats-quick a.current").get_attribute("data-days") == "365"
    assert page.evaluate("window.statsDashboard.grouping") == "month"
    months, total = labels_and_total(page)
    assert len(months) in (12, 13) and months == sorted(months) and total == year_total

    page.select_option("#stats-group", "week")
    page.click("#stats-form button[type=submit]")
    page.wait_for_selector("#stats-dashboard[data-loaded=true]")
    assert page.evaluate("window.statsDashboard.grouping") == "week"
    weeks, total = labels_and_total(page)
    assert len(weeks) in (53, 54) and total == year_total
    assert all(datetime.fromisoformat(week).weekday() == 0 for week in weeks[1:])

    page.click("#stats-quick a[data-days='30']")  # the chosen grouping stays
    page.wait_for_selector("#stats-dashboard[data-loaded=true]")
    assert page.evaluate("window.statsDashboard.grouping") == "week"
    page.select_option("#stats-group", "auto")
    page.click("#stats-form button[type=submit]")
    page.wait_for_selector("#stats-dashboard[data-loaded=true]")
    days, total = labels_and_total(page)
    assert len(days) == 30 and total == sum(1 + back % 5 for back in range(30))
