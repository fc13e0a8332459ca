"""A broadcast as Bot API parameters: one sendMessage or sendPhoto, built once per run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from broadcasts import validation
from broadcasts.models import MEDIA_METHODS, Broadcast, MediaKind


@dataclass(frozen=True)
class Outgoing:
    method: str
    params: dict[str, Any]

    def to(self, chat_id: int) -> dict[str, Any]:
        return {**self.params, "chat_id": chat_id}


def outgoing(broadcast: Broadcast, chat_id: int | None = None) -> Outgoing:
    params: dict[str, Any] = {
        "parse_mode": broadcast.parse_mode or None,
        "reply_markup": validation.reply_markup(broadcast.buttons),
        "disable_notification": broadcast.disable_notification or None,
    }
    if chat_id is not None:
        params["chat_id"] = chat_id
    if broadcast.photo:
        method, field = MEDIA_METHODS.get(
            MediaKind(broadcast.media_kind or MediaKind.PHOTO), MEDIA_METHODS[MediaKind.PHOTO]
        )
        return Outgoing(
            method, {**params, field: broadcast.photo, "caption": broadcast.text or None}
        )
    return Outgoing("sendMessage", {**params, "text": broadcast.text})
