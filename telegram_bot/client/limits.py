"""Telegram's limits on what the bot sends, and how long one send may be in flight.

Every sender (support answers, channel posts, join requests, admin notifications) takes them
from here, so a limit Telegram changes is changed once.
"""

from __future__ import annotations

from telegram_bot.client.core import MAX_CALL_SECONDS

# https://core.telegram.org/bots/api#sendmessage (text) and #sendphoto (caption), in characters.
TEXT_LIMIT = 4096
CAPTION_LIMIT = 1024

# Added to the client's longest call: how long after the start of a send its process may still
# be recording Telegram's answer.
SEND_MARGIN_SECONDS = 5.0
# The send window: an attempt that has not recorded its outcome this long after it started is
# presumed dead (whether its message arrived is then unknown).
SEND_WINDOW_SECONDS = MAX_CALL_SECONDS + SEND_MARGIN_SECONDS


# https://core.telegram.org/bots/api#chatpermissions: what a member may send. restrictChatMember
# with all of them False keeps a member from writing (a mute, a captcha); True lifts that (the
# chat's default permissions still apply).
SEND_PERMISSIONS = (
    "can_send_messages",
    "can_send_audios",
    "can_send_documents",
    "can_send_photos",
    "can_send_videos",
    "can_send_video_notes",
    "can_send_voice_notes",
    "can_send_polls",
    "can_send_other_messages",
    "can_add_web_page_previews",
)


def clip(text: str, limit: int = TEXT_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, with an ellipsis when it was cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
