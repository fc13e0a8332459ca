"""The dashboard's growth figures in a real Chromium: a change is coloured by what it means
(more leaves is bad, more joins good) and the member axis starts at zero."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from community.models import MemberCount, MemberMovement
from tests.fakes.telegram import FakeTelegramServer

CHAT = -100515151


@pytest.mark.django_db(transaction=True)
def test_growth_is_coloured_by_meaning_and_members_start_at_zero(
    admin_page: Any, live_server: Any, live_bot: FakeTelegramServer
) -> None:
    today = datetime.now(UTC).date()
    start = today - timedelta(days=6)
    before = start - timedelta(days=3)
    # The previous week: 1 leave, 1 join; this week: 4 leaves, 3 joins.
    moves = [("leave", before), ("join", before)]
    moves += [("leave", start + timedelta(days=n)) for n in range(4)]
    moves += [("join", start + timedelta(days=n)) for n in range(3)]
    for number, (kind, day) in enumerate(moves):
        at = datetime(day.year, day.month, day.day, 12, tzinfo=UTC)
        MemberMovement.objects.create(
            chat_id=CHAT, user_id=100 + number, stay=f"s{number}", kind=kind, at=at, day=day
        )
    for offset, count in enumerate((180, 181, 183)):
        MemberCount.objects.create(chat_id=CHAT, day=start + timedelta(days=offset), count=count)

    page = admin_page
    page.goto(f"{live_server.url}/admin/stats/?chat_id={CHAT}&start={start}&end={today}")
    page.wait_for_selector("#stats-dashboard[data-loaded=true]")
    leaves = page.locator('[data-figure="leaves"] .delta')
    joins = page.locator('[data-figure="joins"] .delta')
    assert leaves.inner_text().startswith("+3")
    assert "bad" in (leaves.get_attribute("class") or "")
    assert joins.inner_text().startswith("+2")
    assert "good" in (joins.get_attribute("class") or "")
    colours = page.evaluate(
        "[...document.querySelectorAll('[data-figure] .delta')]"
        ".map(e => [e.parentElement.dataset.figure, getComputedStyle(e).color])"
    )
    shown = dict(colours)
    assert shown["leaves"] == "rgb(198, 40, 40)" and shown["joins"] == "rgb(46, 125, 50)"
    assert page.evaluate("window.statsDashboard.growthChart.options.scales.members.beginAtZero")
    assert page.evaluate("window.statsDashboard.growthChart.scales.members.min") == 0
