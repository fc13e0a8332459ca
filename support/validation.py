"""Checks on what users, admins and buttons send, before anything is written.

``check_*`` functions raise ``telegram_bot.errors.ValidationError`` whose ``user_message`` is the
short reason shown in Telegram; the services trust what passed them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext as _
from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as PydanticValidationError

from support.conf import MAX_TEXT_LENGTH
from telegram_bot.client.limits import CAPTION_LIMIT
from telegram_bot.errors import ValidationError
from telegram_bot.updates import Message


@dataclass(frozen=True)
class Content:
    """What a message carries for a ticket: text, or a file id with an optional caption."""

    kind: str  # TicketMessage.Kind: text, photo, document, voice, video_note, video, sticker
    text: str = ""
    file_id: str = ""
    file_name: str = ""
    file_size: int | None = None
    media_group_id: str = ""  # an album: its items arrive as messages of their own

    @property
    def summary(self) -> str:
        """One line for lists and notifications: the text, or ``[photo] caption``."""
        if self.kind == "text":
            return self.text
        label = f"[{self.kind}{': ' + self.file_name if self.file_name else ''}]"
        return f"{label} {self.text}".strip()


def check_text(text: str) -> Content:
    """Text typed by a user or an operator: not blank, at most 4,000 characters. NUL
    characters are dropped, as the webhook drops them from updates: PostgreSQL's text
    columns cannot hold them (an admin-site form posts whatever a client puts in it)."""
    text = text.replace("\x00", "")
    if not text.strip():
        raise ValidationError(
            "empty ticket text",
            user_message=_("The message is empty. Please describe your request."),
        )
    if len(text) > MAX_TEXT_LENGTH:
        raise ValidationError(
            f"text of {len(text)} characters",
            user_message=(
                _(
                    "The message is too long (%(length)d characters; at most %(limit)d). "
                    "Please shorten it or split it."
                )
                % {"length": len(text), "limit": MAX_TEXT_LENGTH}
            ),
        )
    return Content(kind="text", text=text.strip())


def check_message_content(message: Message) -> Content:
    """The ticket content of a Telegram Message: text, photo, document, voice, video note,
    video or sticker (an album's items each arrive as one of these).

    A photo keeps the file id of its largest size. A file may come without caption; text may
    not be blank; either is at most 4,000 characters. Anything else (locations, polls, ...) is
    refused.
    """
    caption = message.caption or ""
    if len(caption) > MAX_TEXT_LENGTH:
        check_text(caption)  # raises the "too long" error
    if message.text is not None:
        return check_text(message.text)
    album = (message.media_group_id or "")[:64]
    if message.photo:
        largest = max(message.photo, key=lambda size: size.width * size.height)
        return Content(
            kind="photo",
            text=caption.strip(),
            file_id=_file_id(largest.file_id),
            file_size=largest.file_size,
            media_group_id=album,
        )
    files: tuple[tuple[str, Any], ...] = (
        ("document", message.document),
        ("voice", message.voice),
        ("video_note", message.video_note),
        *((kind, _extra_file(message, kind)) for kind in EXTRA_KINDS),
    )
    for kind, media in files:
        if media is not None and media.file_id:
            name = (getattr(media, "file_name", None) or "")[:255]
            return Content(
                kind=kind,
                text=caption.strip(),
                file_id=_file_id(media.file_id),
                file_name=name,
                file_size=getattr(media, "file_size", None),
                media_group_id=album,
            )
    raise ValidationError(
        "unsupported message type",
        user_message=_(
            "Support accepts text, photos, documents, voice messages, videos, video notes and "
            "stickers. Please send one of those."
        ),
    )


# Kinds the core's Message model does not declare (they arrive as its extra fields).
EXTRA_KINDS = ("video", "sticker")


class _File(BaseModel):
    """A video or sticker of a message: the parts the desk keeps."""

    model_config = ConfigDict(extra="ignore")
    file_id: str = Field(min_length=1)
    file_name: str | None = None
    file_size: int | None = Field(default=None, ge=0, le=2**53)


def _extra_file(message: Message, kind: str) -> _File | None:
    raw = (message.model_extra or {}).get(kind)
    if not isinstance(raw, dict):
        return None
    try:
        return _File.model_validate(raw)
    except PydanticValidationError:
        return None


# An answer's file goes with "Support · ticket #N" and a blank line before its caption, in one
# caption of at most CAPTION_LIMIT characters; this leaves room for that line in any language.
ANSWER_CAPTION_LIMIT = CAPTION_LIMIT - 100


def check_answer(content: Content) -> Content:
    """An answer from support: a file's caption must fit in the caption the user gets (else its
    end would be cut off on the way)."""
    if content.kind != "text" and len(content.text) > ANSWER_CAPTION_LIMIT:
        raise ValidationError(
            f"answer caption of {len(content.text)} characters",
            user_message=_(
                "The caption is too long for an answer with a file (%(length)d characters; "
                "at most %(limit)d). Send the text as a message of its own."
            )
            % {"length": len(content.text), "limit": ANSWER_CAPTION_LIMIT},
        )
    return content


def _file_id(file_id: str) -> str:
    if not file_id or len(file_id) > 255:
        raise ValidationError("file id too long", user_message=_("This file cannot be used."))
    return file_id


# --- callback data ---------------------------------------------------------------------------
# sup:reply:<ticket id>             admin: answer with the next message
# sup:resolve:<ticket id>[:<page>]  admin: close; from the panel the page to go back to
# sup:view:<ticket id>:<page>       admin: the panel's view of one ticket
# sup:list:<page>                   admin: the panel's list of open tickets
# sup:close:<ticket id>             user: close one of their own tickets
CALLBACK_PREFIX = "sup:"
_CALLBACK = re.compile(
    r"^sup:(?P<action>reply|resolve|view|close|list):(?P<first>[1-9][0-9]{0,17})"
    r"(?::(?P<page>[1-9][0-9]{0,5}))?$"
)
_PAGE_ACTIONS = {"reply": False, "resolve": None, "view": True, "close": False, "list": False}


@dataclass(frozen=True)
class Callback:
    action: str
    ticket_id: int = 0
    page: int | None = None  # the panel page (None: not pressed in the panel)


def check_callback(data: str) -> Callback:
    """Parse ``sup:...`` button data; refuse anything malformed or forged."""
    match = _CALLBACK.match(data)
    if match is None:
        raise ValidationError(
            f"bad callback {data[:64]!r}", user_message=_("This button is not valid.")
        )
    action, first, page = match["action"], int(match["first"]), match["page"]
    needs_page = _PAGE_ACTIONS[action]
    if (needs_page is True and page is None) or (needs_page is False and page is not None):
        raise ValidationError(
            f"bad callback {data[:64]!r}", user_message=_("This button is not valid.")
        )
    if action == "list":
        return Callback(action=action, page=first)
    return Callback(action=action, ticket_id=first, page=int(page) if page else None)


_RATE = re.compile(r"^sup:rate:(?P<ticket>[1-9][0-9]{0,17}):(?P<rating>good|bad)$")


def check_rating(data: str) -> tuple[int, str]:
    """``sup:rate:<ticket id>:good|bad``: (ticket id, rating); refuse anything else."""
    match = _RATE.match(data)
    if match is None:
        raise ValidationError(
            f"bad callback {data[:64]!r}", user_message=_("This button is not valid.")
        )
    return int(match["ticket"]), match["rating"]


def parse_ticket_number(text: str) -> int | None:
    """``5`` or ``#5`` as a ticket number; None for anything else."""
    match = re.fullmatch(r"#?([1-9][0-9]{0,9})", text.strip())
    return int(match[1]) if match else None
