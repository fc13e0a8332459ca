"""The statistics dashboard in a real Chromium: a conversation goes through the webhook, the
backfill closes the past days, and the page shows the numbers the test counted itself."""

from __future__ import annotations

import csv
import io
import time
from collections import Counter
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest

from stats.backfill import backfill_run
from stats.config import counting_config_clear
from stats.live_writer import coverage_memo_clear
from tests.conftest import WEBHOOK_SECRET
from tests.fakes.telegram import FakeTelegramServer
from tests.stats.conversation import Conversation, configure_rules

CHAT = -100424242


@pytest.fixture
def wired(live_bot: FakeTelegramServer) -> FakeTelegramServer:
    counting_config_clear()
    coverage_memo_clear()
    return live_bot


@pytest.mark.django_db(transaction=True)
def test_the_dashboard_shows_the_counted_numbers(
    admin_page: Any, live_server: Any, wired: FakeTelegramServer
) -> None:
    import httpx

    today = datetime.now(UTC).date()
    days = [today - timedelta(days=2), today - timedelta(days=1), today]
    configure_rules()
    conversation = Conversation(
        seed=42, days=days, now=int(time.time()), chats=(CHAT,), users=(21, 22, 23, 24),
        messages=70,
    )  # fmt: skip
    with httpx.Client(base_url=live_server.url) as http:
        for update in conversation.updates:
            response = http.post(
                "/telegram/webhook",
                json=update,
                headers={"X-Telegram-Bot-Api-Secret-Token": WEBHOOK_SECRET},
            )
            assert response.status_code == 200
    assert backfill_run(owner="test", force=True).outcome == "done"
    truth = conversation.truth

    page = admin_page
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{live_server.url}/admin/")
    page.click("#nav-sidebar-apps a[href='/admin/stats/']")  # the sidebar's Statistics
    page.select_option("#stats-chat", str(CHAT))
    page.fill("#stats-start", days[0].isoformat())
    page.fill("#stats-end", days[-1].isoformat())
    page.click("#stats-form button[type=submit]")
    page.wait_for_selector("#stats-dashboard[data-loaded=true]")

    assert "UTC" in page.inner_text("#stats-zone")
    total = sum(c["messages"] for d in days for c in truth.day_of(CHAT, d).values())
    messages_card = page.locator('[data-figure="messages"] .value').inner_text()
    assert messages_card.replace(",", "").replace("\u202f", "") == str(total)
    assert not page.is_visible("#days")  # data quality is folded away
    # The retention cohorts as a chart: the last 12 weeks, from the members app's API.
    assert page.evaluate("window.statsDashboard.cohorts.length") == 12
    assert page.is_visible("#cohorts-chart")
    # One plain line says how complete the figures are; the engineers' words stay folded.
    line = page.inner_text("#quality-line")
    assert line.startswith("How complete are these figures:"), line
    assert not any(w in line.lower() for w in ("coverage", "backfill", "kv", "database", "poison"))
    page.click("#data-quality summary")
    assert "read from the database" in page.inner_text("#source-note")
    for day in days:
        row = page.locator(f'#days tr[data-day="{day.isoformat()}"]')
        expected = sum(c["messages"] for c in truth.day_of(CHAT, day).values())
        assert row.locator("td.messages").inner_text() == str(expected)
        source = (
            "live counts (not verified yet)" if day == today else "database (verified complete)"
        )
        assert row.locator("td.source").inner_text() == source
    assert page.locator(f'#days tr[data-day="{days[0].isoformat()}"] td.status').inner_text() == (
        "complete"
    )
    chart = page.evaluate("window.statsDashboard.chart.data.datasets[0].data")
    assert chart == [sum(c["messages"] for c in truth.day_of(CHAT, d).values()) for d in days]
    assert page.evaluate("window.statsDashboard.chart.options.scales.y.ticks.precision") == 0

    members = _members(truth, days)
    rows = page.locator("#top-members tbody tr")
    assert rows.count() == len(members)
    for user_id, counts in members.items():
        row = page.locator(f'#top-members tr[data-user-id="{user_id}"]')
        assert _cells(row) == {
            "messages": str(counts["messages"]),
            "words": str(counts["words"]),
            "voice-minutes": f"{counts['voice_seconds'] / 60:.1f}",
        }
        assert row.locator("td.last-seen").inner_text()
    week = [[0] * 24 for _ in range(7)]
    for day in days:
        for counts in truth.day_of(CHAT, day).values():
            for hour in range(24):
                week[day.weekday()][hour] += counts[f"hour_{hour:02d}"]
    for weekday in range(7):
        cells = page.locator(f'#week-heatmap tr[data-weekday="{weekday}"] td[data-hour]')
        shown = [int(count) for count in cells.evaluate_all("cs => cs.map(c => c.dataset.count)")]
        assert shown == week[weekday]

    href = page.get_attribute("#csv-export", "href")
    exported = page.request.get(f"{live_server.url}{href}")
    table = list(csv.DictReader(io.StringIO(exported.body().decode("utf-8-sig"))))
    assert {int(r["user_id"]): (int(r["messages"]), int(r["words"])) for r in table} == {
        user_id: (counts["messages"], counts["words"]) for user_id, counts in members.items()
    }
    daily = page.request.get(f"{live_server.url}{page.get_attribute('#csv-daily', 'href')}")
    assert daily.body().startswith("\ufeffday,messages".encode())

    url = page.url
    page.set_viewport_size({"width": 1440, "height": 900})
    for theme in ("light", "dark"):
        page.set_viewport_size({"width": 390, "height": 844})
        page.goto(url)
        page.evaluate(f"document.documentElement.dataset.theme = '{theme}'")
        page.wait_for_selector("#stats-dashboard[data-loaded=true]")
        page.click("#data-quality summary")
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, f"{theme}: the page is {width} px wide at 390 px"
    assert errors == []


def _members(truth: Any, days: list[date]) -> dict[int, Counter[str]]:
    members: dict[int, Counter[str]] = {}
    for day in days:
        for user_id, counts in truth.day_of(CHAT, day).items():
            members.setdefault(user_id, Counter()).update(counts)
    return members


def _cells(row: Any) -> dict[str, str]:
    names = ("messages", "words", "voice-minutes")
    return {name: row.locator(f"td.{name}").inner_text() for name in names}
