"""Admin-site form pieces for posts."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy

from content import validation


class ButtonsField(forms.CharField):
    """Inline URL buttons as text: one row per line, ``Label | URL``, ``&&`` between buttons."""

    widget = forms.Textarea(attrs={"rows": 3, "cols": 80})

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault(
            "help_text",
            gettext_lazy(
                "One row per line; each button 'Label | https://…' (http, https or tg links); "
                "several buttons in a row separated by '&&'. At most 10 rows."
            ),
        )
        for unused in ("encoder", "decoder", "max_length"):
            kwargs.pop(unused, None)
        super().__init__(**kwargs)

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, list):
            return validation.format_buttons(value)
        return value

    def to_python(self, value: Any) -> Any:
        if isinstance(value, list):
            return value
        text = super().to_python(value)
        try:
            return validation.parse_buttons(text or "")
        except ValidationError as exc:
            raise ValidationError(exc.messages) from None


class PollOptionsField(forms.CharField):
    """A poll's options as text: one per line."""

    widget = forms.Textarea(attrs={"rows": 4, "cols": 60})

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("help_text", gettext_lazy("2 to 10 answers, one per line."))
        for unused in ("encoder", "decoder", "max_length"):
            kwargs.pop(unused, None)
        super().__init__(**kwargs)

    def prepare_value(self, value: Any) -> Any:
        return "\n".join(value) if isinstance(value, list) else value

    def to_python(self, value: Any) -> Any:
        if isinstance(value, list):
            return value
        text = super().to_python(value) or ""
        return [line.strip() for line in text.splitlines() if line.strip()]


class PostAdminForm(forms.ModelForm):
    """The post form: publish_at, when set or changed, must be ahead (a past time is refused
    here rather than silently publishing at once)."""

    def clean_publish_at(self) -> Any:
        value = self.cleaned_data.get("publish_at")
        if value is not None and "publish_at" in self.changed_data:
            try:
                validation.check_publish_at(value)
            except ValidationError as exc:
                raise ValidationError(exc.messages) from None
        return value
