"""Figures one feature app offers the others, as a core service (features never import each
other): the app that owns the data registers a provider under a name in its ``ready()``; the
app that shows or uses the figures asks for it by name and copes with its absence.

Names in use (each provider documents its signature where it is defined):

- ``stats.active_users``: which of some users wrote in a chat within a date range;
- ``community.growth``: joins, leaves and member counts of a chat per day.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Provider = Callable[..., Any]
_providers: dict[str, Provider] = {}


def offer(name: str, provider: Provider) -> None:
    """Register (or replace) the provider called ``name``."""
    _providers[name] = provider


def withdraw(name: str) -> None:
    _providers.pop(name, None)


def provider(name: str) -> Provider | None:
    """The provider called ``name``, or None when no installed app offers it."""
    return _providers.get(name)
