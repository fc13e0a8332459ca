"""Durations typed by moderators (``telegram_bot.durations``: ``30m``, ``2h``, ``1h30m``, one
word of a command), within Telegram's range for restrictions (30 seconds to 366 days; outside
it Telegram means "forever", which a typo must never silently become: anything that starts
like a number and is not a duration is refused, never read as the reason)."""

from __future__ import annotations

import re

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from moderation.models import MAX_SECONDS, MIN_SECONDS
from telegram_bot.durations import seconds_of

# What looks like an attempt at a duration: a number first, whatever follows ("-5h", "1.5h",
# "10 min" is "10" then a reason): refused rather than read as the reason, which is forever.
_LOOKS_LIKE = re.compile(r"^[-+]?\d")  # any digit: "٣m" is refused too
HELP = gettext_lazy("Durations look like 30m, 2h or 7d (30 seconds to 366 days).")


class DurationError(ValueError):
    pass


def looks_like_duration(token: str) -> bool:
    return bool(_LOOKS_LIKE.match(token))


def parse_duration(token: str) -> int:
    """Seconds of ``token``; DurationError (with a one-line answer) otherwise."""
    seconds = None if any(char.isspace() for char in token) else seconds_of(token)
    if seconds is None:
        raise DurationError(
            _("%(token)r is not a duration.") % {"token": quoted(token)} + f" {HELP}"
        )
    if not MIN_SECONDS <= seconds <= MAX_SECONDS:
        raise DurationError(_("%(token)s is out of range.") % {"token": quoted(token)} + f" {HELP}")
    return seconds


def quoted(token: str) -> str:
    """A command's argument as a refusal quotes it: a command of 4,096 characters must get an
    answer Telegram accepts (a refused answer made the update a dead letter)."""
    return token if len(token) <= 40 else token[:40] + "…"


def describe(seconds: int | None) -> str:
    """``for 2h``, ``for 7d``... or ``for good`` for no limit."""
    if not seconds:
        return _("for good")
    units = ((_("%(count)dd"), 86400), (_("%(count)dh"), 3600), (_("%(count)dm"), 60))
    for unit, size in units:
        if seconds >= size and seconds % size == 0:
            return _("for %(duration)s") % {"duration": unit % {"count": seconds // size}}
    return _("for %(duration)s") % {"duration": _("%(count)ds") % {"count": seconds}}
