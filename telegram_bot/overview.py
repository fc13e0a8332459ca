"""The overview on the admin index: key figures as cards, each app contributing its own.

An app names a provider in its AppConfig (``FeatureConfig.overview_cards``, a dotted path);
the provider takes the user and returns its ``Card`` list, leaving out the cards whose list the
user may not open. Providers must stay cheap: a few bounded queries each (the admin index runs
them all on every visit; ``tests/integration/test_overview.py`` counts them). "Today" is the
day in the ``TIME_ZONE`` setting (chats may have their own zone, but the overview spans them).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any

from django.utils import timezone
from django.utils.module_loading import import_string
from django.utils.translation import gettext as _

from telegram_bot.features import enabled_feature_configs

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Card:
    """One figure: ``value`` (formatted), what it is compared with (``detail``), where its
    list is (``url``, blank: none), ``alert`` when the figure asks for attention, and its
    place among all apps' cards (``order``, lowest first; activity first, troubles last)."""

    key: str
    title: str
    value: str
    detail: str = ""
    url: str = ""
    alert: bool = False
    order: int = 100


Provider = Callable[[Any], list[Card]]


@dataclass(frozen=True)
class ChatCount:
    """One chat's figure: today so far, yesterday up to the same time, and the list of
    exactly today's ``today`` (blank: none)."""

    today: int
    yesterday: int
    url: str = ""


@dataclass(frozen=True)
class ChatFigure:
    """A today-so-far figure split by chat (``FeatureConfig.chat_figures``): a column of the
    "Today by chat" page, ``order`` as a card's."""

    key: str
    title: str
    counts: dict[int, ChatCount]
    order: int = 100


def chat_figures(user: Any) -> list[ChatFigure]:
    """Every enabled app's figures by chat for ``user``; a provider that fails costs its own
    figures only (logged)."""
    figures: list[ChatFigure] = []
    for config in enabled_feature_configs():
        path = getattr(config, "chat_figures", None)
        if not path:
            continue
        try:
            figures.extend(import_string(path)(user))
        except Exception:
            log.exception("figures by chat of %s failed", config.label)
    return sorted(figures, key=lambda figure: figure.order)


def overview_cards(user: Any) -> list[Card]:
    """Every enabled app's cards for ``user``, in ``INSTALLED_APPS`` order. A provider that
    fails costs its own cards only (one card says it is unavailable)."""
    cards: list[Card] = []
    for config in enabled_feature_configs():
        path = getattr(config, "overview_cards", None)
        if not path:
            continue
        try:
            provider: Provider = import_string(path)
            cards.extend(provider(user))
        except Exception:
            log.exception("overview cards of %s failed", config.label)
            cards.append(
                Card(
                    key=f"{config.label}-unavailable",
                    title=str(config.verbose_name),
                    value="—",
                    detail=_("unavailable (see the logs)"),
                    alert=True,
                )
            )
    return sorted(cards, key=lambda card: card.order)


def local_today() -> date:
    """Today in the ``TIME_ZONE`` setting."""
    return timezone.localdate()


def day_bounds(day: date) -> tuple[datetime, datetime]:
    """The start and end (exclusive) of ``day`` in the ``TIME_ZONE`` setting, aware."""
    zone = timezone.get_default_timezone()
    start = datetime.combine(day, time.min, tzinfo=zone)
    end = datetime.combine(day + timedelta(days=1), time.min, tzinfo=zone)
    return start, end


def versus_yesterday(today: int, yesterday: int) -> str:
    """``by this time yesterday 12 (+3)``: the detail line of a card that compares today so
    far with yesterday up to the same time (``same_time_yesterday``), never with a whole day."""
    if today == yesterday:
        return _("as many as by this time yesterday")
    difference = today - yesterday
    sign = "+" if difference > 0 else ""
    return _("by this time yesterday %(count)s (%(sign)s%(difference)s)") % {
        "count": f"{yesterday:,}",
        "sign": sign,
        "difference": f"{difference:,}",
    }


def same_time_yesterday() -> datetime:
    """This moment a day ago (in the ``TIME_ZONE`` setting, so a DST change keeps the local
    time): where yesterday's part of a today-versus-yesterday card ends."""
    zone = timezone.get_default_timezone()
    now = timezone.now().astimezone(zone)
    return (now.replace(tzinfo=None) - timedelta(days=1)).replace(tzinfo=zone)


def capped(count: int, more: bool) -> str:
    """A count read with a bound: ``100+`` when there were more than were read."""
    return f"{count:,}+" if more else f"{count:,}"


def age(since: datetime, now: datetime | None = None) -> str:
    """``3d 4h``, ``2h 5m``, ``7m``: how long ago ``since`` was."""
    seconds = max(0, int(((now or timezone.now()) - since).total_seconds()))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes = rest // 60
    if days:
        return _("%(days)sd %(hours)sh") % {"days": days, "hours": hours}
    if hours:
        return _("%(hours)sh %(minutes)sm") % {"hours": hours, "minutes": minutes}
    return _("%(minutes)sm") % {"minutes": minutes}
