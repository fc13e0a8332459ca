"""Figures one app offers another through typed hooks on its AppConfig."""

from __future__ import annotations

from datetime import date

import pytest
from django.apps import apps

from telegram_bot import insights


def test_the_installed_apps_offer_growth_and_who_wrote_when() -> None:
    growth = insights.growth()
    assert isinstance(growth, insights.Growth)
    assert growth.permission == "community.view_membermovement"
    active = insights.active_users()
    assert active is not None and active.__module__ == "stats.insights"


def test_a_disabled_app_offers_nothing(settings: pytest.FixtureRequest) -> None:
    settings.FEATURES_DISABLED = ["stats", "community"]
    assert insights.active_users() is None
    assert insights.growth() is None


def test_a_hook_that_names_something_else_than_a_growth_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = apps.get_app_config("community")
    monkeypatch.setattr(config, "insight_growth", "community.insights.growth")  # the function
    with pytest.raises(TypeError, match=r"not a telegram_bot\.insights\.Growth"):
        insights.growth()


def test_a_growth_passes_its_arguments_on() -> None:
    seen = []

    def days(chat_id, start, end, *, zone=None):  # type: ignore[no-untyped-def]
        seen.append((chat_id, start, end, zone))
        return []

    assert insights.Growth(days=days, permission="")(5, date(2026, 1, 1), date(2026, 1, 2)) == []
    assert seen == [(5, date(2026, 1, 1), date(2026, 1, 2), None)]
