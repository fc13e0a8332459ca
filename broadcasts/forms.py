"""The console's broadcast form: Telegram's limits checked before anything is saved."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _

from broadcasts import validation
from broadcasts.models import Broadcast


class ButtonsField(forms.CharField):
    """Buttons as JSON text: rows of {"text": ..., "url": ...}."""

    widget = forms.Textarea(attrs={"rows": 3})

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, list):
            return json.dumps(value, ensure_ascii=False) if value else ""
        return value

    def to_python(self, value: Any) -> Any:
        text = (value or "").strip()
        if not text:
            return []
        try:
            parsed = json.loads(text)
        except ValueError:
            raise ValidationError(_('Buttons are JSON: [[{"text": ..., "url": ...}]].')) from None
        return validation.check_buttons(parsed)


class BroadcastForm(forms.ModelForm):
    buttons = ButtonsField(required=False, label=_("Buttons"))

    class Meta:
        model = Broadcast
        fields = (
            "text",
            "parse_mode",
            "photo",
            "media_kind",
            "buttons",
            "disable_notification",
            "segment_language",
            "segment_chat_id",
            "segment_joined_since",
            "send_at",
            "preview_chat_id",
        )

    def clean_photo(self) -> str:
        return validation.check_photo(self.cleaned_data.get("photo") or "")

    def clean_segment_language(self) -> str:
        language = (self.cleaned_data.get("segment_language") or "").strip().lower()
        if language and not (2 <= len(language) <= 16 and language.replace("-", "").isalpha()):
            raise ValidationError(_("A language is a code such as en, ru or pt-br."))
        return language

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if "photo" in data and "text" in data:
            try:
                validation.check_text(data["text"] or "", has_photo=bool(data["photo"]))
            except ValidationError as exc:
                self.add_error("text", exc)
        return data
