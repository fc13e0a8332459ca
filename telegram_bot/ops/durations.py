"""Durations in the console's settings forms in human units: an operator types ``10m``, ``1d``
or ``1h 30m`` and reads ``1d`` back, never 86400; the model keeps its number (seconds, or
minutes for a field counted in minutes) and its own range."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.http import HttpRequest
from django.utils.functional import Promise
from django.utils.text import capfirst, format_lazy
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from unfold.widgets import UnfoldAdminTextInputWidget

from telegram_bot.durations import compact, seconds_of

DURATION_HELP = gettext_lazy("Like 30s, 10m, 2h, 7d or 1h 30m.")
_WHOLE = {
    60: gettext_lazy("Give whole minutes, like 15m."),
    3600: gettext_lazy("Give whole hours, like 2h."),
    86400: gettext_lazy("Give whole days, like 7d."),
}


class DurationField(forms.Field):
    """A duration typed in units, cleaned to a whole number of ``unit`` seconds."""

    def __init__(
        self, *, unit: int = 1, least: int | None = None, most: int | None = None, **kwargs: Any
    ) -> None:
        self.unit, self.least, self.most = unit, least, most
        kwargs.setdefault("widget", forms.TextInput(attrs={"maxlength": "40", "size": "12"}))
        super().__init__(**kwargs)

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            return compact(value * self.unit)
        return value

    def to_python(self, value: Any) -> int | None:
        text = "" if value is None else str(value).strip()[:40]
        if not text:
            return None
        seconds = seconds_of(text)
        if seconds is None:
            raise ValidationError(
                _("%(text)s is not a duration. %(help)s")
                % {"text": text[:40], "help": DURATION_HELP},
                code="invalid",
            )
        whole, rest = divmod(seconds, self.unit)
        if rest:
            raise ValidationError(
                _WHOLE.get(self.unit, _("Give a whole number of %(count)d seconds."))
                % {"count": self.unit},
                code="invalid",
            )
        if self.least is not None and whole < self.least:
            raise ValidationError(
                _("At least %(least)s.") % {"least": compact(self.least * self.unit)},
                code="min_value",
            )
        if self.most is not None and whole > self.most:
            raise ValidationError(
                _("At most %(most)s.") % {"most": compact(self.most * self.unit)}, code="max_value"
            )
        return whole


@dataclass(frozen=True)
class Duration:
    """How the console shows a model's number field as a duration: its unit in seconds, and
    the label and help that replace ones that speak of seconds."""

    label: str | Promise
    help: str | Promise
    unit: int = 1


class DurationFieldsMixin:
    """A model admin whose ``durations`` (field name -> ``Duration``) are typed and shown in
    units. Before the ModelAdmin in the bases."""

    durations: dict[str, Duration] = {}

    def formfield_for_dbfield(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        shape = self.durations.get(db_field.name)
        if shape is None:
            return super().formfield_for_dbfield(db_field, request, **kwargs)  # type: ignore[misc]
        limits = {type(check): check.limit_value for check in db_field.validators}
        return DurationField(
            unit=shape.unit,
            least=limits.get(MinValueValidator),
            most=limits.get(MaxValueValidator),
            # As the model's own fields: a capital letter, unfold's input.
            label=capfirst(str(shape.label)),  # built per request, in its language
            widget=UnfoldAdminTextInputWidget(attrs={"maxlength": "40"}),
            required=not db_field.blank,
            initial=db_field.get_default() if db_field.has_default() else None,
            help_text=format_lazy("{} {}", shape.help, DURATION_HELP),
        )
