"""Durations as people write them: ``30s``, ``30m``, ``2h``, ``7d``, ``2w`` and their sums
(``1h30m``, ``1h 30m``), with Latin or Russian unit letters (``30м``, ``2ч``, ``7д``). The
moderators' commands and the console's settings forms read them with this one grammar, and
show a duration back in it (``compact``)."""

from __future__ import annotations

import re

from django.utils.translation import npgettext

UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
# Russian unit letters (s, m, h, d, w: sek, min, chas, den, nedelya), escaped: ruff refuses
# letters that look like Latin ones.
UNITS |= {"\u0441": 1, "\u043c": 60, "\u0447": 3600, "\u0434": 86400, "\u043d": 7 * 86400}
_LETTERS = "".join(UNITS)
_PART = re.compile(rf"([0-9]{{1,7}})([{_LETTERS}])")
_DURATION = re.compile(rf"(?:[0-9]{{1,7}}[{_LETTERS}]){{1,5}}")


def seconds_of(text: str) -> int | None:
    """The seconds ``text`` says (spaces between parts allowed), or None when it is not a
    duration."""
    joined = "".join(text.lower().split())
    if _DURATION.fullmatch(joined) is None:
        return None
    return sum(int(number) * UNITS[unit] for number, unit in _PART.findall(joined))


def compact(seconds: int) -> str:
    """``1d``, ``2h30m``, ``45s``: what ``seconds_of`` reads back to the same number."""
    parts = []
    for letter, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count}{letter}")
    return "".join(parts) or "0s"


def spoken(seconds: int) -> str:
    """``1 hour 30 minutes``, ``30 days``: a duration in words for a page, in the active
    language with its plural forms."""
    units = (
        (86400, lambda n: npgettext("duration", "%(count)d day", "%(count)d days", n)),
        (3600, lambda n: npgettext("duration", "%(count)d hour", "%(count)d hours", n)),
        (60, lambda n: npgettext("duration", "%(count)d minute", "%(count)d minutes", n)),
        (1, lambda n: npgettext("duration", "%(count)d second", "%(count)d seconds", n)),
    )
    parts = []
    for size, words in units:
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(words(count) % {"count": count})
    return " ".join(parts) or units[-1][1](0) % {"count": 0}
