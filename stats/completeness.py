"""How complete a range's figures are, in one line an operator reads ("final: 28 days; still
being counted: 2 days"), folded from what engineers read in the days' details (where each
day's numbers come from, whether it was verified, failed writes).

A day is final once verified; still being counted while it is today or not verified yet (live
counts, or late messages since its verification); may miss messages when it was read
unverified or a live write of it failed; without data before the bot counted in the chat.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from stats.selectors import DayView


@dataclass(frozen=True)
class Completeness:
    final: int = 0
    counting: int = 0
    gaps: int = 0
    no_data: int = 0

    @property
    def line(self) -> str:
        """The one line, in the active language (its plural forms)."""
        days = self.final + self.counting + self.gaps + self.no_data
        if days and self.final == days:
            text = ngettext(
                "the %(count)d day shown is final.", "all %(count)d days shown are final.", days
            ) % {"count": days}
            return _("How complete are these figures: %(what)s") % {"what": text}
        parts = []
        if self.final:
            parts.append(
                ngettext("final: %(count)d day", "final: %(count)d days", self.final)
                % {"count": self.final}
            )
        if self.counting:
            parts.append(
                ngettext(
                    "still being counted: %(count)d day",
                    "still being counted: %(count)d days",
                    self.counting,
                )
                % {"count": self.counting}
            )
        if self.gaps:
            parts.append(
                ngettext(
                    "may miss some messages: %(count)d day",
                    "may miss some messages: %(count)d days",
                    self.gaps,
                )
                % {"count": self.gaps}
            )
        if self.no_data:
            parts.append(
                ngettext("no data: %(count)d day", "no data: %(count)d days", self.no_data)
                % {"count": self.no_data}
            )
        if not parts:
            return _("How complete are these figures: no days in the range.")
        return _("How complete are these figures: %(what)s") % {"what": "; ".join(parts) + "."}


def completeness(days: Iterable[DayView]) -> Completeness:
    final = counting = gaps = no_data = 0
    for day in days:
        if day.source == "none":
            no_data += 1
        elif day.source == "database_unverified" or day.poisoned or day.repaired:
            gaps += 1
        elif day.source == "database":
            final += 1
        else:  # live, checking
            counting += 1
    return Completeness(final, counting, gaps, no_data)
