"""The console's one rule for times: every date and time an operator reads or enters is in
one named zone, and the zone's name stands beside it.

The zone is Django's current time zone: ``TIME_ZONE`` unless a page activates a chat's own
(the statistics of one chat). Forms take a time in that zone and say so; nothing is labelled
UTC unless it is shown in UTC.
"""

from __future__ import annotations

from datetime import datetime

from django import forms
from django.utils import timezone
from django.utils.functional import lazy


def zone_name() -> str:
    """The name of the zone the console shows and takes times in (``Europe/Moscow``)."""
    return timezone.get_current_timezone_name()


zone_name_lazy = lazy(zone_name, str)


def zoned(moment: datetime | None, *, seconds: bool = False) -> str:
    """``2026-12-07 18:00 (Europe/Moscow)``: the moment in the console's zone, named;
    "-" for none."""
    if moment is None:
        return "-"
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment, timezone.get_default_timezone())
    local = timezone.localtime(moment)
    shape = "%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M"
    return f"{local:{shape}} ({zone_name()})"


class ZonedDateTimeInput(forms.DateTimeInput):
    """The browser's own date and time picker (``datetime-local``), read in the console's
    zone as Django's form field reads every naive time. It replaces the admin's calendar
    shortcuts, whose note compares the browser's zone with the server's and misleads an
    operator who reads the zone named beside the field."""

    input_type = "datetime-local"

    def __init__(self, attrs: dict[str, str] | None = None) -> None:
        super().__init__(attrs={"step": "60", **(attrs or {})}, format="%Y-%m-%dT%H:%M")


class ZonedDateTimeField(forms.DateTimeField):
    """A time entered in the console's zone; its label names the zone."""

    widget = ZonedDateTimeInput
    input_formats = ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d %H:%M:%S"]
