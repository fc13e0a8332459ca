"""Checks of what a broadcast sends, against Telegram's limits: one short reason each."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _

from telegram_bot.client import CAPTION_LIMIT, TEXT_LIMIT

MAX_BUTTON_ROWS = 10
MAX_BUTTONS_PER_ROW = 8
BUTTON_LABEL_LIMIT = 64
BUTTON_URL_LIMIT = 2048
URL_SCHEMES = ("https://", "http://", "tg://")
FILE_ID_LIMIT = 255

Buttons = list[list[dict[str, str]]]


def check_text(text: str, *, has_photo: bool) -> None:
    if has_photo:
        if len(text) > CAPTION_LIMIT:
            raise ValidationError(
                _("A photo's caption is at most %(limit)s characters; this one has %(n)s.")
                % {"limit": CAPTION_LIMIT, "n": len(text)}
            )
        return
    if not text.strip():
        raise ValidationError(_("Write a text, or give a photo."))
    if len(text) > TEXT_LIMIT:
        raise ValidationError(
            _("A message is at most %(limit)s characters; this one has %(n)s.")
            % {"limit": TEXT_LIMIT, "n": len(text)}
        )


def check_photo(photo: str) -> str:
    photo = photo.strip()
    if not photo:
        return ""
    if photo.startswith("https://"):
        if len(photo) > BUTTON_URL_LIMIT or any(c.isspace() for c in photo):
            raise ValidationError(_("The photo link is not a valid https:// link."))
        return photo
    if len(photo) > FILE_ID_LIMIT or not photo.replace("-", "").replace("_", "").isalnum():
        raise ValidationError(_("The photo is neither a Telegram file id nor an https:// link."))
    return photo


def check_buttons(value: Any) -> Buttons:
    """Rows of ``{"text": ..., "url": ...}``; returns them normalised."""
    if value in (None, "", []):
        return []
    if not isinstance(value, list) or not all(isinstance(row, list) for row in value):
        raise ValidationError(_('Buttons are rows (lists) of {"text": ..., "url": ...}.'))
    if len(value) > MAX_BUTTON_ROWS:
        raise ValidationError(_("At most %(n)s rows of buttons.") % {"n": MAX_BUTTON_ROWS})
    rows: Buttons = []
    for row in value:
        if not row or len(row) > MAX_BUTTONS_PER_ROW:
            raise ValidationError(
                _("Each row holds 1 to %(n)s buttons.") % {"n": MAX_BUTTONS_PER_ROW}
            )
        cleaned = []
        for button in row:
            if not isinstance(button, dict) or set(button) != {"text", "url"}:
                raise ValidationError(_('Each button is {"text": ..., "url": ...}.'))
            text, url = str(button["text"]).strip(), str(button["url"]).strip()
            if not text or len(text) > BUTTON_LABEL_LIMIT:
                raise ValidationError(
                    _("A button's label has 1 to %(n)s characters.") % {"n": BUTTON_LABEL_LIMIT}
                )
            if not url.startswith(URL_SCHEMES) or len(url) > BUTTON_URL_LIMIT:
                raise ValidationError(
                    _("A button's link starts with https://, http:// or tg:// (%(label)s).")
                    % {"label": text}
                )
            cleaned.append({"text": text, "url": url})
        rows.append(cleaned)
    return rows


def reply_markup(buttons: Buttons) -> dict[str, Any] | None:
    return {"inline_keyboard": buttons} if buttons else None
