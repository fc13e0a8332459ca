"""The Telegram side of posts: Bot API parameters built from a post, and the calls.

Parameters are built (and an uploaded photo read from MEDIA_ROOT) before anything is locked or
claimed, so that nothing but the HTTP call itself happens while a publication is in flight.
"""

from __future__ import annotations

import mimetypes
import os
from dataclasses import dataclass
from typing import Any

from django.core.files.storage import default_storage

from content import validation
from content.models import Post
from telegram_bot.bot import get_client
from telegram_bot.errors import TelegramApiError

ALREADY_DELETED = "message to delete not found"


@dataclass(frozen=True)
class Outgoing:
    """One sendMessage or sendPhoto, ready to go."""

    method: str
    params: dict[str, Any]


def outgoing(post: Post, *, chat_id: int | str | None = None) -> Outgoing:
    """The post as Bot API parameters, to its channel (or to ``chat_id``, for a preview)."""
    target = validation.chat_id_param(post.channel) if chat_id is None else chat_id
    markup = validation.reply_markup(post.buttons)
    silent = post.silent or None
    if post.is_poll:
        return Outgoing(
            "sendPoll",
            {
                "chat_id": target,
                "question": post.poll_question,
                "options": [{"text": option} for option in post.poll_options],
                **_quiz(post),
                "reply_markup": markup,
                "disable_notification": silent,
            },
        )
    if post.is_album:
        return _album(post, target, silent)
    if not post.has_photo:
        return Outgoing(
            "sendMessage",
            {
                "chat_id": target,
                "text": post.text,
                "reply_markup": markup,
                "disable_notification": silent,
            },
        )
    photo: Any = post.photo_file_id
    if not photo:
        data = validation.read_file(post.photo)
        name = os.path.basename(post.photo.name or "") or "photo.jpg"
        content_type = validation.photo_type(data) or mimetypes.guess_type(name)[0] or "image/jpeg"
        photo = (name, data, content_type)
    params = {"chat_id": target, "photo": photo, "caption": post.text or None}
    return Outgoing("sendPhoto", {**params, "reply_markup": markup, "disable_notification": silent})


def _album(post: Post, target: int | str, silent: bool | None) -> Outgoing:
    """sendMediaGroup; an item uploaded from the console is attached (``attach://fileN``)."""
    media: list[dict[str, Any]] = []
    files: dict[str, Any] = {}
    for number, item in enumerate(post.album):
        source = item["media"]
        if source.startswith(validation.ALBUM_UPLOAD):
            name = source.removeprefix(validation.ALBUM_UPLOAD)
            with default_storage.open(name, "rb") as stored:
                data = stored.read()
            kind = "video/mp4" if item["type"] == "video" else validation.photo_type(data)
            files[f"file{number}"] = (os.path.basename(name), data, kind or "image/jpeg")
            source = f"attach://file{number}"
        media.append({"type": item["type"], "media": source})
    if post.text:
        media[0]["caption"] = post.text  # an album's caption is its first item's
    params = {"chat_id": target, "media": media, "disable_notification": silent, **files}
    return Outgoing("sendMediaGroup", params)


def _quiz(post: Post) -> dict[str, Any]:
    """A quiz's parameters (Bot API 10.1 takes the correct answers as a list)."""
    if not post.is_quiz:
        return {}
    return {
        "type": "quiz",
        "correct_option_ids": [post.poll_correct_option],
        "explanation": post.poll_explanation or None,
    }


def send(message: Outgoing) -> dict[str, Any]:
    """Send it; returns Telegram's Message (an album's first, with ``album_message_ids``).
    Raises TelegramApiError."""
    client = get_client()
    if message.method == "sendMediaGroup":
        # The album's messages: the first stands for the post, all of them are kept.
        messages = client.call("sendMediaGroup", **message.params)
        return {**messages[0], "album_message_ids": [m["message_id"] for m in messages]}
    if message.method == "sendPoll":
        return client.send_poll(**message.params)
    if message.method == "sendPhoto":
        return client.send_photo(**message.params)
    return client.send_message(**message.params)


def sent_photo_file_id(message: dict[str, Any]) -> str:
    """The file_id of the largest size of a sent photo ('' for a text message)."""
    sizes = message.get("photo") or []
    return str(sizes[-1].get("file_id") or "") if sizes else ""


def pin(post: Post) -> None:
    """Pin the published message (again: pinning a pinned message changes nothing)."""
    get_client().call(
        "pinChatMessage",
        chat_id=validation.chat_id_param(post.channel),
        message_id=int(post.channel_message_id or 0),
        disable_notification=post.silent or None,
    )


def unpin(post: Post) -> None:
    """Unpin the published message (unpinning a message that is not pinned changes nothing)."""
    get_client().call(
        "unpinChatMessage",
        chat_id=validation.chat_id_param(post.channel),
        message_id=int(post.channel_message_id or 0),
    )


def edit_buttons(post: Post, *, buttons: validation.Buttons) -> None:
    """Edit the published message's buttons alone (none: the keyboard is removed)."""
    get_client().edit_message_reply_markup(
        chat_id=validation.chat_id_param(post.channel),
        message_id=post.channel_message_id,
        reply_markup=validation.reply_markup(buttons) or {"inline_keyboard": []},
    )


def edit(post: Post, *, text: str, buttons: validation.Buttons) -> None:
    """Edit the published message: its text, or its caption, and its buttons."""
    client = get_client()
    chat_id = validation.chat_id_param(post.channel)
    markup = validation.reply_markup(buttons) or {"inline_keyboard": []}
    if post.is_album:  # the caption of its first message; an album has no buttons
        client.edit_message_caption(
            chat_id=chat_id, message_id=post.channel_message_id, caption=text
        )
    elif post.has_photo:
        client.edit_message_caption(
            chat_id=chat_id, message_id=post.channel_message_id, caption=text, reply_markup=markup
        )
    else:
        client.edit_message_text(
            chat_id=chat_id, message_id=post.channel_message_id, text=text, reply_markup=markup
        )


def delete(post: Post) -> None:
    """Delete the published message; a message that is already gone counts as deleted."""
    chat_id = validation.chat_id_param(post.channel)
    if post.album_message_ids:  # deleteMessages skips the ones already gone
        get_client().delete_messages(chat_id=chat_id, message_ids=post.album_message_ids)
        return
    try:
        get_client().delete_message(chat_id=chat_id, message_id=int(post.channel_message_id or 0))
    except TelegramApiError as exc:
        if ALREADY_DELETED not in exc.description.lower():
            raise
