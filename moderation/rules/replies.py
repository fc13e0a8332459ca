"""Saved replies of notes and filters: what is saved (``content_of``: a text with Rose's button
syntax, or the media of the message replied to) and how it is sent (``reply_send``), with the
placeholders filled in (``render``).

Buttons: ``[Label](buttonurl://https://example.org)`` anywhere in the text, one row each;
``[Label](buttonurl://https://example.org:same)`` joins the row above. Only http, https and tg
links. Placeholders: ``{first}``, ``{last}``, ``{fullname}``, ``{username}``, ``{mention}``,
``{id}``, ``{chatname}`` and ``{rules}`` (the chat's note ``rules``). The text is sent as plain
text: nothing a member's name holds is read as markup.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from telegram_bot.client import TelegramClient
from telegram_bot.updates import Message, User

MAX_BUTTONS = 20
MEDIA_KINDS = ("photo", "document", "video", "animation", "audio", "voice", "sticker")
_BUTTON = re.compile(r"\[([^\[\]\n]{1,64})\]\(buttonurl://([^\s)]{1,500}?)(:same)?\)")
_PLACEHOLDER = re.compile(r"\{(first|last|fullname|username|mention|id|chatname|rules)\}")
_SAFE_LINK = re.compile(r"^(https?|tg)://", re.IGNORECASE)


@dataclass
class Content:
    text: str = ""
    buttons: list[list[dict[str, str]]] = field(default_factory=list)
    media_kind: str = ""
    file_id: str = ""

    def __bool__(self) -> bool:
        return bool(self.text.strip() or self.file_id)


def content_of(text: str, reply: Message | None) -> Content:
    """What ``/save name ...`` or ``/filter word ...`` saves: the text after the name (else the
    replied message's text or caption), its buttons taken out, and the replied media."""
    kind, file_id = _media(reply) if reply is not None else ("", "")
    if not text.strip() and reply is not None:
        text = reply.text_or_caption
    rows: list[list[dict[str, str]]] = []
    count = 0

    def take(match: re.Match[str]) -> str:
        nonlocal count
        label, url, same = match.group(1).strip(), match.group(2), match.group(3)
        if not _SAFE_LINK.match(url) or count >= MAX_BUTTONS:
            return match.group(0)
        count += 1
        button = {"text": label, "url": url}
        if same and rows:
            rows[-1].append(button)
        else:
            rows.append([button])
        return ""

    text = _BUTTON.sub(take, text).strip()
    return Content(text[:4096], rows, kind, file_id)


def _media(message: Message) -> tuple[str, str]:
    if message.photo:
        return "photo", message.photo[-1].file_id
    extra = message.model_extra or {}
    for kind in ("animation", "video", "audio", "sticker"):
        found = extra.get(kind)
        if isinstance(found, dict) and isinstance(found.get("file_id"), str):
            return kind, found["file_id"]
    if message.document is not None:
        return "document", message.document.file_id
    if message.voice is not None:
        return "voice", message.voice.file_id
    return "", ""


def render(text: str, user: User | None, *, chat_title: str, rules: str) -> str:
    values = {
        "first": user.first_name if user else "",
        "last": (user.last_name or "") if user else "",
        "fullname": user.full_name if user else "",
        "username": f"@{user.username}" if user and user.username else "",
        "mention": (f"@{user.username}" if user.username else user.full_name) if user else "",
        "id": str(user.id) if user else "",
        "chatname": chat_title,
        "rules": rules,
    }
    return _PLACEHOLDER.sub(lambda match: values[match.group(1)], text)


def reply_send(
    client: TelegramClient,
    *,
    chat_id: int,
    content: Content,
    text: str,
    reply_to: int | None = None,
    thread_id: int | None = None,
) -> None:
    """Send a saved reply (a text, or a media file with the text as its caption)."""
    params: dict[str, Any] = {"chat_id": chat_id}
    if content.buttons:
        params["reply_markup"] = {"inline_keyboard": content.buttons}
    if reply_to is not None:
        params["reply_parameters"] = {"message_id": reply_to, "allow_sending_without_reply": True}
    if thread_id is not None:
        params["message_thread_id"] = thread_id
    if content.media_kind in MEDIA_KINDS and content.file_id:
        params[content.media_kind] = content.file_id
        if text and content.media_kind != "sticker":
            params["caption"] = text[:1024]
        method = "send" + content.media_kind.capitalize()
        client.call(method, **params)
        return
    client.send_message(text=text[:4096] or "…", **params)
