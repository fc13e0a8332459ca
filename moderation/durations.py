"""Durations typed by moderators: ``30s``, ``30m``, ``2h``, ``7d``, ``2w``, within Telegram's
range for restrictions (30 seconds to 366 days; outside it Telegram means "forever", which a
typo must never silently become)."""

from __future__ import annotations

import re

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from moderation.models import MAX_SECONDS, MIN_SECONDS

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"^(\d{1,7})([smhdw])$")
# What looks like an attempt at a duration (so "-5h" is refused rather than read as a reason).
_LOOKS_LIKE = re.compile(r"^[-+]?\d+[a-z]*$", re.I)
HELP = gettext_lazy("Durations look like 30m, 2h or 7d (30 seconds to 366 days).")


class DurationError(ValueError):
    pass


def looks_like_duration(token: str) -> bool:
    return bool(_LOOKS_LIKE.match(token))


def parse_duration(token: str) -> int:
    """Seconds of ``token``; DurationError (with a one-line answer) otherwise."""
    match = _DURATION.match(token.lower())
    if match is None:
        raise DurationError(_("%(token)r is not a duration.") % {"token": token} + f" {HELP}")
    seconds = int(match.group(1)) * _UNITS[match.group(2)]
    if not MIN_SECONDS <= seconds <= MAX_SECONDS:
        raise DurationError(_("%(token)s is out of range.") % {"token": token} + f" {HELP}")
    return seconds


def describe(seconds: int | None) -> str:
    """``for 2h``, ``for 7d``... or ``for good`` for no limit."""
    if not seconds:
        return _("for good")
    units = ((_("%(count)dd"), 86400), (_("%(count)dh"), 3600), (_("%(count)dm"), 60))
    for unit, size in units:
        if seconds >= size and seconds % size == 0:
            return _("for %(duration)s") % {"duration": unit % {"count": seconds // size}}
    return _("for %(duration)s") % {"duration": _("%(count)ds") % {"count": seconds}}
