"""Figures one feature app offers the others (features never import each other), as typed
hooks on ``FeatureConfig``: the app that owns the data names its provider's dotted path in
``insight_active_users`` or ``insight_growth``; the app that shows or uses the figures asks
``active_users()`` or ``growth()`` and copes with None (no enabled app offers them).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import date, tzinfo
from typing import Any, Protocol

from django.utils.module_loading import import_string

from telegram_bot.features import enabled_feature_configs


class ActiveUsers(Protocol):
    """Which of ``user_ids`` wrote at least one message in ``chat_id`` on a UTC day of
    ``since .. until`` (inclusive)."""

    def __call__(
        self, chat_id: int, user_ids: Collection[int], since: date, until: date
    ) -> set[int]: ...


@dataclass(frozen=True)
class Growth:
    """Joins, leaves and member counts of a chat per day: ``days(chat_id, start, end, zone=)``
    gives ``{"date", "joins", "leaves", "members"}`` for every day of ``start..end`` in
    ``zone``; ``permission`` is what a user needs to see them wherever they are shown ("" shows
    them to nobody)."""

    days: Callable[..., list[dict[str, Any]]]
    permission: str

    def __call__(
        self, chat_id: int, start: date, end: date, *, zone: tzinfo | None = None
    ) -> list[dict[str, Any]]:
        return self.days(chat_id, start, end, zone=zone)


def active_users() -> ActiveUsers | None:
    """The provider an enabled app names in ``insight_active_users``, if one does."""
    provider: ActiveUsers | None = _offered("insight_active_users")
    return provider


def growth() -> Growth | None:
    """The provider an enabled app names in ``insight_growth``, if one does."""
    provider = _offered("insight_growth")
    if provider is not None and not isinstance(provider, Growth):
        raise TypeError(f"insight_growth names {provider!r}, not a telegram_bot.insights.Growth")
    return provider


def _offered(hook: str) -> Any:
    for config in enabled_feature_configs():
        path = getattr(config, hook, None)
        if path:
            return import_string(path)
    return None
