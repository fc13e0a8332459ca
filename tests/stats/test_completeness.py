"""How complete the figures are, in one line (stats.completeness): the days' sources and
failed writes, which engineers read in the details, folded into final / still being counted /
may miss messages / no data, in plain words and with Russian plural forms; the report
carries it, and the dashboard shows it outside the engineers' details."""

from __future__ import annotations

import time
from datetime import date, timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import translation

from stats.completeness import Completeness, completeness
from stats.selectors import DayView
from tests.builders import make_message_update

GROUP = -100999
ENGINEERING = ("coverage", "backfill", "KV", "database", "poison", "verified", "live")


def day(source: str, **extra: Any) -> DayView:
    return DayView(date(2026, 1, 1), source, "complete", "", extra.pop("poisoned", []), {}, **extra)


def test_days_fold_into_four_plain_kinds() -> None:
    days = [
        day("database"),
        day("database"),
        day("live"),
        day("checking"),
        day("database_unverified"),
        day("database", poisoned=["messages"]),
        day("live", repaired=["words"]),
        day("none"),
    ]
    assert completeness(days) == Completeness(final=2, counting=2, gaps=3, no_data=1)


def test_the_line_speaks_plain_words() -> None:
    line = Completeness(final=28, counting=1, gaps=0, no_data=3).line
    assert line == (
        "How complete are these figures: final: 28 days; still being counted: 1 day; "
        "no data: 3 days."
    )
    assert not any(word.lower() in line.lower() for word in ENGINEERING)
    assert (
        Completeness(final=30).line
        == "How complete are these figures: all 30 days shown are final."
    )
    assert Completeness(final=1).line == "How complete are these figures: the 1 day shown is final."


@pytest.mark.parametrize(
    ("counts", "expected"),
    [
        (
            (1, 2, 5, 11),
            "итоговые: 1 день; ещё считаются: 2 дня; возможны пропуски: 5 дней; "
            "нет данных: 11 дней.",
        ),
        ((21, 22, 0, 0), "итоговые: 21 день; ещё считаются: 22 дня."),
    ],
)
def test_the_line_in_russian_has_its_plural_forms(counts: tuple[int, ...], expected: str) -> None:
    with translation.override("ru"):
        line = Completeness(*counts).line
    assert line == f"Насколько полны эти цифры: {expected}"


@pytest.mark.django_db
def test_the_report_carries_the_line(bot: Any, post_update: Any, admin_client: Client) -> None:
    update = make_message_update(
        "hi", chat_id=GROUP, user_id=5, chat_type="supergroup", date=int(time.time())
    )
    assert post_update(update)["X-Update-Outcome"] == "processed"
    today = date.today()
    body = admin_client.get(
        "/api/v1/stats/report",
        {"chat_id": GROUP, "start": today - timedelta(days=2), "end": today},
    ).json()
    found = body["completeness"]
    assert (
        found["counting"] >= 1
        and sum(found[k] for k in ("final", "counting", "gaps", "no_data")) == 3
    )
    assert found["line"].startswith("How complete are these figures:")
    page = admin_client.get("/admin/stats/").content.decode()
    assert 'id="quality-line"' in page and "Details for engineers" in page
