"""What a post may contain: Telegram's limits, checked when a post is saved (model ``clean``,
services, admin forms), never first discovered when it is sent.

``check_*`` functions raise Django's ``ValidationError`` (forms show it next to the field);
``parse_*`` functions turn operator input (a buttons text, a time) into values.
"""

from __future__ import annotations

import re
import struct
import uuid
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.core.exceptions import ValidationError
from django.core.files import File
from django.core.validators import URLValidator
from django.db.models.fields.files import FieldFile
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from content import conf, recurrence
from telegram_bot.client import CAPTION_LIMIT, TEXT_LIMIT

Buttons = list[list[dict[str, str]]]

_USERNAME = re.compile(r"@[A-Za-z][A-Za-z0-9_]{3,30}[A-Za-z0-9]")
_CHANNEL_ID = re.compile(r"-100\d{6,13}")
_TME_LINK = re.compile(r"(?:https?://)?t\.me/([A-Za-z0-9_]+)/?", re.IGNORECASE)
_TG_URL = re.compile(r"tg://[A-Za-z0-9_]+(\?\S*)?")
_HTTP_URL = URLValidator(schemes=["http", "https"])
ROW_SEPARATOR = "&&"
LABEL_SEPARATOR = "|"


# --- text -------------------------------------------------------------------------------------
def check_text(text: str, *, has_photo: bool) -> None:
    """A text post needs 1-4096 characters; a photo's caption may be empty, at most 1024."""
    limit = CAPTION_LIMIT if has_photo else TEXT_LIMIT
    if not has_photo and not text.strip():
        raise ValidationError({"text": _("A text post needs a text (or add a photo).")})
    if len(text) > limit:
        if has_photo:
            problem = _(
                "A photo's caption is at most %(limit)d characters; this one has %(length)d."
            )
        else:
            problem = _("A message is at most %(limit)d characters; this one has %(length)d.")
        raise ValidationError({"text": problem % {"limit": limit, "length": len(text)}})


# --- polls ------------------------------------------------------------------------------------
# https://core.telegram.org/bots/api#sendpoll
POLL_QUESTION_LIMIT = 300
POLL_OPTION_LIMIT = 100
POLL_MIN_OPTIONS, POLL_MAX_OPTIONS = 2, 10


def check_poll(question: str, options: Any, *, text: str, has_photo: bool) -> tuple[str, list[str]]:
    """A poll post: a question of 1-300 characters and 2-10 distinct options of 1-100; no
    text or photo beside it (Telegram sends a poll alone). Returns them trimmed."""
    question = (question or "").strip()
    if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
        raise ValidationError({"poll_options": _("Poll options are a list of texts.")})
    options = [o.strip() for o in options if o.strip()]
    if not question:
        raise ValidationError({"poll_question": _("A poll needs a question.")})
    if len(question) > POLL_QUESTION_LIMIT:
        raise ValidationError(
            {
                "poll_question": _("A poll's question is at most %(limit)d characters.")
                % {"limit": POLL_QUESTION_LIMIT}
            }
        )
    if not POLL_MIN_OPTIONS <= len(options) <= POLL_MAX_OPTIONS:
        raise ValidationError(
            {
                "poll_options": _("A poll has 2 to 10 options; this one has %(n)d.")
                % {"n": len(options)}
            }
        )
    if any(len(o) > POLL_OPTION_LIMIT for o in options):
        raise ValidationError(
            {
                "poll_options": _("A poll option is at most %(limit)d characters.")
                % {"limit": POLL_OPTION_LIMIT}
            }
        )
    if len(set(options)) != len(options):
        raise ValidationError({"poll_options": _("Each poll option must be different.")})
    if text.strip() or has_photo:
        raise ValidationError({"text": _("A poll is sent alone: leave the text and photo empty.")})
    return question, options


QUIZ_EXPLANATION_LIMIT = 200
QUIZ_EXPLANATION_LINE_FEEDS = 2
QUIZ_MARK = "*"


def check_quiz(
    poll_type: str, correct_option: int | None, explanation: str, *, options: int
) -> str:
    """A quiz (``sendPoll`` with ``type=quiz``) has exactly one correct option among its
    ``options`` and an optional explanation of 0-200 characters with at most 2 line feeds; a
    regular poll has neither. Returns the explanation trimmed."""
    explanation = (explanation or "").strip()
    if poll_type not in ("regular", "quiz"):
        raise ValidationError({"poll_type": _("A poll is a regular poll or a quiz.")})
    if poll_type == "regular":
        if explanation:
            raise ValidationError(
                {"poll_explanation": _("Only a quiz has an explanation: choose the quiz type.")}
            )
        return ""
    if correct_option is None or not 0 <= correct_option < options:
        raise ValidationError(
            {"poll_options": _("A quiz needs exactly one correct option: start its line with *.")}
        )
    if len(explanation) > QUIZ_EXPLANATION_LIMIT:
        raise ValidationError(
            {
                "poll_explanation": _("A quiz's explanation is at most %(limit)d characters.")
                % {"limit": QUIZ_EXPLANATION_LIMIT}
            }
        )
    if explanation.count("\n") > QUIZ_EXPLANATION_LINE_FEEDS:
        raise ValidationError(
            {"poll_explanation": _("A quiz's explanation has at most 2 line breaks.")}
        )
    return explanation


def split_quiz_mark(options: list[str]) -> tuple[list[str], list[int]]:
    """Options as typed in the form, a quiz's correct one starting with ``*``: the options
    without the mark, and the indexes of the marked ones."""
    marked = [index for index, option in enumerate(options) if option.startswith(QUIZ_MARK)]
    return [option.removeprefix(QUIZ_MARK).strip() for option in options], marked


# --- albums -----------------------------------------------------------------------------------
# https://core.telegram.org/bots/api#sendmediagroup: 2-10 items; photos and videos mix.
ALBUM_MIN, ALBUM_MAX = 2, 10
ALBUM_KINDS = ("photo", "video")
_FILE_ID = re.compile(r"[A-Za-z0-9_-]{20,255}")
# An item uploaded from the console: "upload:<its stored name>" (album_upload_store).
ALBUM_UPLOAD = "upload:"
_ALBUM_STORED = re.compile(r"content/album/\d{4}/\d{2}/[0-9a-f]{32}\.(?:jpg|png|webp|mp4)")
VIDEO_MAX_BYTES = (
    50 * 1024 * 1024
)  # what a bot may upload (https://core.telegram.org/bots/api#sending-files)


def check_album_upload(upload: File) -> str:
    """An album item uploaded from the console: a photo within sendPhoto's limits
    (``check_photo_file``) or an MP4 video of at most 50 MB. Returns "photo" or "video"."""
    head = read_head(upload, PHOTO_HEAD_BYTES)
    if photo_type(head) is not None:
        check_photo_file(upload)
        return "photo"
    if head[4:8] != b"ftyp":
        raise ValidationError(_("An album file is a JPEG, PNG or WebP photo or an MP4 video."))
    if (getattr(upload, "size", None) or 0) > VIDEO_MAX_BYTES:
        raise ValidationError(_("A video is at most 50 MB."))
    return "video"


def album_upload_name(kind: str, head: bytes) -> str:
    """Where an uploaded album item is stored: a generated name, its extension from the bytes."""
    extension = "mp4" if kind == "video" else PHOTO_EXTENSIONS[photo_type(head) or "image/jpeg"]
    now = timezone.now()
    return f"content/album/{now:%Y/%m}/{uuid.uuid4().hex}.{extension}"


def check_album(items: Any, *, text: str, others: bool, buttons: bool) -> list[dict[str, str]]:
    """An album: 2-10 items of ``{"type": photo|video, "media": file id or http(s) link}``,
    a caption of at most 1024 characters, nothing beside it (no uploaded photo, no poll, no
    buttons: sendMediaGroup takes no reply_markup). Returns the items cleaned."""
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise ValidationError({"album": _("An album is a list of photos and videos.")})
    if not ALBUM_MIN <= len(items) <= ALBUM_MAX:
        raise ValidationError(
            {
                "album": _("An album has 2 to 10 photos or videos; this one has %(n)d.")
                % {"n": len(items)}
            }
        )
    cleaned = []
    for number, item in enumerate(items, start=1):
        kind, media = str(item.get("type", "")).strip(), str(item.get("media", "")).strip()
        if kind not in ALBUM_KINDS or set(item) != {"type", "media"}:
            raise ValidationError(
                {
                    "album": _(
                        "Line %(line)d: write 'photo <file id or link>' or "
                        "'video <file id or link>'."
                    )
                    % {"line": number}
                }
            )
        if not _album_media_ok(media):
            raise ValidationError(
                {
                    "album": _("Line %(line)d: give a Telegram file id or an http(s) link.")
                    % {"line": number}
                }
            )
        cleaned.append({"type": kind, "media": media})
    if others:
        raise ValidationError(
            {"album": _("An album is sent alone: remove the uploaded photo or the poll.")}
        )
    if buttons:
        raise ValidationError({"buttons": _("An album cannot have buttons: Telegram sends none.")})
    check_text(text, has_photo=True)
    return cleaned


def _album_media_ok(media: str) -> bool:
    if media.startswith(ALBUM_UPLOAD):
        return bool(_ALBUM_STORED.fullmatch(media.removeprefix(ALBUM_UPLOAD)))
    if media.lower().startswith(("http://", "https://")):
        try:
            _HTTP_URL(media)
        except ValidationError:
            return False
        return len(media) <= conf.BUTTON_URL_LIMIT
    return bool(_FILE_ID.fullmatch(media))


def parse_album(text: str) -> list[dict[str, str]]:
    """Operator input: one item per line, ``photo <media>`` or ``video <media>``."""
    items = []
    for line in (text or "").splitlines():
        if not line.strip():
            continue
        kind, _space, media = line.strip().partition(" ")
        items.append({"type": kind.lower(), "media": media.strip()})
    return items


def format_album(items: list[dict[str, str]]) -> str:
    """The inverse of ``parse_album``."""
    return "\n".join(f"{item['type']} {item['media']}" for item in items or [])


# --- channel ----------------------------------------------------------------------------------
def normalize_channel(value: str) -> str:
    """``@name``, a ``t.me/name`` link or a ``-100…`` id, as Telegram's ``chat_id`` takes it."""
    value = (value or "").strip()
    link = _TME_LINK.fullmatch(value)
    if link:
        value = "@" + link.group(1)
    if _USERNAME.fullmatch(value) or _CHANNEL_ID.fullmatch(value):
        return value
    raise ValidationError(
        {
            "channel": _(
                "Give the channel as @username (5-32 letters, digits or _) or as its "
                "id, which starts with -100."
            )
        }
    )


def check_also_to(channels: Any, *, channel: str) -> list[str]:
    """The other channels of a post: at most ``conf.MAX_ALSO_TO``, each as
    ``normalize_channel`` takes it, none twice and none the post's own. Returns them
    normalized."""
    if channels in (None, ""):
        return []
    if not isinstance(channels, list) or not all(isinstance(c, str) for c in channels):
        raise ValidationError({"also_to": _("Other channels are a list of channels.")})
    if len(channels) > conf.MAX_ALSO_TO:
        raise ValidationError(
            {"also_to": _("At most %(count)d other channels.") % {"count": conf.MAX_ALSO_TO}}
        )
    cleaned: list[str] = []
    for value in channels:
        try:
            name = normalize_channel(value)
        except ValidationError:
            raise ValidationError(
                {
                    "also_to": _("%(value)r is not a channel: give @username or its -100… id.")
                    % {"value": value[:40]}
                }
            ) from None
        if name.lower() == channel.lower() or name.lower() in (c.lower() for c in cleaned):
            raise ValidationError({"also_to": _("%(channel)s is named twice.") % {"channel": name}})
        cleaned.append(name)
    return cleaned


def chat_id_param(channel: str) -> int | str:
    """The ``chat_id`` parameter for a stored channel: an int id, or the @username."""
    return int(channel) if _CHANNEL_ID.fullmatch(channel) else channel


# --- buttons ----------------------------------------------------------------------------------
def check_buttons(rows: Any) -> Buttons:
    """Rows of ``{"text", "url"}``: at most 10 rows of at most 8, short labels, http(s)/tg
    URLs. Returns the rows cleaned (labels and URLs stripped)."""
    if rows in (None, ""):
        return []
    if not isinstance(rows, list) or not all(isinstance(row, list) for row in rows):
        raise ValidationError({"buttons": _("Buttons are a list of rows.")})
    if len(rows) > conf.MAX_BUTTON_ROWS:
        raise ValidationError(
            {"buttons": _("At most %(count)d rows of buttons.") % {"count": conf.MAX_BUTTON_ROWS}}
        )
    cleaned: Buttons = []
    for number, row in enumerate(rows, start=1):
        if not row:
            raise ValidationError({"buttons": _("Row %(row)d has no button.") % {"row": number}})
        if len(row) > conf.MAX_BUTTONS_PER_ROW:
            raise ValidationError(
                {
                    "buttons": _("Row %(row)d: at most %(count)d buttons in a row.")
                    % {"row": number, "count": conf.MAX_BUTTONS_PER_ROW}
                }
            )
        cleaned.append([_check_button(button, number) for button in row])
    return cleaned


def _check_button(button: Any, row: int) -> dict[str, str]:
    if not isinstance(button, dict) or set(button) != {"text", "url"}:
        raise ValidationError(
            {"buttons": _("Row %(row)d: a button has a text and a URL.") % {"row": row}}
        )
    label, url = str(button["text"]).strip(), str(button["url"]).strip()
    if not label:
        raise ValidationError(
            {"buttons": _("Row %(row)d: a button has an empty label.") % {"row": row}}
        )
    if len(label) > conf.BUTTON_LABEL_LIMIT:
        limit = conf.BUTTON_LABEL_LIMIT
        raise ValidationError(
            {
                "buttons": _("Row %(row)d: the label %(label)r… is over %(limit)d characters.")
                % {"row": row, "label": label[:20], "limit": limit}
            }
        )
    check_button_url(url, row=row)
    return {"text": label, "url": url}


def check_button_url(url: str, *, row: int) -> None:
    problem = _("Row %(row)d: %(url)r is not an http://, https:// or tg:// link.") % {
        "row": row,
        "url": url[:60],
    }
    if len(url) > conf.BUTTON_URL_LIMIT:
        raise ValidationError({"buttons": _("Row %(row)d: the URL is too long.") % {"row": row}})
    if url.lower().startswith("tg://"):
        if not _TG_URL.fullmatch(url):
            raise ValidationError({"buttons": problem})
        return
    try:
        _HTTP_URL(url)
    except ValidationError:
        raise ValidationError({"buttons": problem}) from None


def parse_buttons(text: str) -> Buttons:
    """Operator input: one row per line, buttons in a row separated by ``&&``, each button
    ``Label | URL``. Raises ValidationError on anything malformed."""
    rows: Buttons = []
    for number, line in enumerate((text or "").splitlines(), start=1):
        if not line.strip():
            continue
        row = []
        for part in line.split(ROW_SEPARATOR):
            label, separator, url = part.partition(LABEL_SEPARATOR)  # a URL may hold a |
            if not separator:
                raise ValidationError(
                    {
                        "buttons": _("Line %(line)d: write each button as 'Label | https://…'.")
                        % {"line": number}
                    }
                )
            row.append({"text": label.strip(), "url": url.strip()})
        rows.append(row)
    return check_buttons(rows)


def format_buttons(rows: Buttons) -> str:
    """The inverse of ``parse_buttons``."""
    return "\n".join(
        f" {ROW_SEPARATOR} ".join(f"{b['text']} {LABEL_SEPARATOR} {b['url']}" for b in row)
        for row in rows or []
    )


def reply_markup(rows: Buttons) -> dict[str, Any] | None:
    """The Bot API ``reply_markup`` for the rows, or None without buttons."""
    if not rows:
        return None
    return {
        "inline_keyboard": [[{"text": b["text"], "url": b["url"]} for b in row] for row in rows]
    }


# --- photo ------------------------------------------------------------------------------------
def check_photo_file(photo: File) -> None:
    """A JPEG, PNG or WebP of at most 10 MB whose sides fit Telegram's sendPhoto limits."""
    if isinstance(photo, FieldFile) and photo.name and photo.storage.exists(photo.name):
        # Already stored (a post saved before): it was checked when it was uploaded. A new
        # upload's FieldFile carries the uploaded name, which is not in the storage: uploads
        # are stored under generated names (photo_upload_to).
        return
    size = getattr(photo, "size", None)
    if size is not None and size > conf.PHOTO_MAX_BYTES:
        raise ValidationError(_("A photo is at most 10 MB."))
    data = read_file(photo)
    if len(data) > conf.PHOTO_MAX_BYTES:
        raise ValidationError(_("A photo is at most 10 MB."))
    kind = photo_type(data)
    if kind is None:
        raise ValidationError(_("The photo must be a JPEG, PNG or WebP image."))
    sides = _dimensions(data, kind)
    if sides is not None:
        width, height = sides
        if width <= 0 or height <= 0:
            raise ValidationError(_("The photo has no width or height."))
        if width + height > conf.PHOTO_MAX_SIDES:
            raise ValidationError(_("The photo's width and height must add up to at most 10000."))
        if max(width, height) / min(width, height) > conf.PHOTO_MAX_RATIO:
            raise ValidationError(_("The photo's sides must be at most 20 times each other."))


def read_file(photo: File) -> bytes:
    """The whole content of an uploaded or stored file: a stored file is opened and closed
    again, an upload is left open and rewound (Django still saves it)."""
    opened_here = bool(getattr(photo, "closed", False))
    if opened_here:
        photo.open("rb")
    try:
        photo.seek(0)
        data = photo.read()
        photo.seek(0)
    finally:
        if opened_here:
            photo.close()
    return bytes(data)


# The extension a stored photo gets, from its detected type: never from the uploaded name.
PHOTO_EXTENSIONS = {"image/jpeg": "jpg", "image/png": "png", "image/webp": "webp"}
PHOTO_HEAD_BYTES = 12  # enough for photo_type


def photo_upload_to(instance: Any, filename: str) -> str:
    """Where ``Post.photo`` stores an upload: a generated name under ``content/photos/YYYY/MM/``
    whose extension comes from the image type detected in the bytes. The uploaded name is
    ignored: a PNG named ``x.html`` must never be stored (and later served) as ``.html``."""
    kind = photo_type(read_head(instance.photo, PHOTO_HEAD_BYTES))
    if kind is None:  # the field's validator refuses such a file before it is saved
        raise ValidationError(_("The photo must be a JPEG, PNG or WebP image."))
    now = timezone.now()
    return f"content/photos/{now:%Y/%m}/{uuid.uuid4().hex}.{PHOTO_EXTENSIONS[kind]}"


def read_head(photo: File, size: int) -> bytes:
    """The first ``size`` bytes of an uploaded or stored file (as ``read_file`` handles it)."""
    opened_here = bool(getattr(photo, "closed", False))
    if opened_here:
        photo.open("rb")
    try:
        photo.seek(0)
        data = photo.read(size)
        photo.seek(0)
    finally:
        if opened_here:
            photo.close()
    return bytes(data)


def photo_type(data: bytes) -> str | None:
    """``image/jpeg``, ``image/png`` or ``image/webp`` from the file's first bytes."""
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def _dimensions(data: bytes, kind: str) -> tuple[int, int] | None:
    """(width, height) from a PNG or JPEG header (WebP: not checked). A header cut short is
    refused with a ValidationError; None when the header holds no size."""
    if kind == "image/png":
        if len(data) < 24 or data[12:16] != b"IHDR":
            raise ValidationError(_TRUNCATED)
        width, height = struct.unpack(">II", data[16:24])
        return int(width), int(height)
    if kind == "image/jpeg":
        return _jpeg_dimensions(data)
    return None


_TRUNCATED = gettext_lazy("The photo file is cut short or damaged.")
_SOF_MARKERS = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}


def _jpeg_dimensions(data: bytes) -> tuple[int, int] | None:
    """The size in the first start-of-frame segment; every read is checked against the length
    of the data first (a file cut short raises ValidationError, never struct.error)."""
    index = 2
    while index + 1 < len(data):
        if data[index] != 0xFF:
            return None
        marker = data[index + 1]
        if marker == 0xFF:  # a fill byte before a marker
            index += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            index += 2
            continue
        if index + 4 > len(data):
            raise ValidationError(_TRUNCATED)
        (length,) = struct.unpack(">H", data[index + 2 : index + 4])
        if marker in _SOF_MARKERS:
            if index + 9 > len(data):
                raise ValidationError(_TRUNCATED)
            height, width = struct.unpack(">HH", data[index + 5 : index + 9])
            return int(width), int(height)
        index += 2 + length
    if index > len(data):
        raise ValidationError(_TRUNCATED)  # the last segment runs past the end
    return None


# --- time -------------------------------------------------------------------------------------
# At most 6 ASCII digits per amount: no OverflowError from timedelta or the addition, and
# each optional part starts with its digits, so the match is linear (no backtracking between
# adjacent runs of spaces).
_RELATIVE = re.compile(
    r"\+\s*(?:(?P<d>[0-9]{1,6})\s*d\s*)?(?:(?P<h>[0-9]{1,6})\s*h\s*)?"
    r"(?:(?P<m>[0-9]{1,6})\s*m(?:in)?\s*)?",
    re.IGNORECASE,
)
_TIME_INPUT_LIMIT = 64  # longer than any time we read
_UNREADABLE_TIME = gettext_lazy("Send a time like 2026-12-01 18:00 (UTC), or +2h, +30m, +1d.")
_ABSOLUTE_FORMATS = ("%Y-%m-%d %H:%M", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S")


def parse_publish_time(text: str, *, now: datetime | None = None) -> datetime:
    """``2026-12-01 18:00`` (UTC) or ``+2h`` / ``+30m`` / ``+1d`` / ``+1h30m``: an aware
    datetime in the future, at most a year ahead. Raises ValidationError otherwise."""
    now = now or timezone.now()
    value = (text or "").strip()
    if len(value) > _TIME_INPUT_LIMIT:
        raise ValidationError({"publish_at": _UNREADABLE_TIME})
    relative = _RELATIVE.fullmatch(value)
    try:
        if relative and any(relative.groupdict().values()):
            parts = {key: int(amount or 0) for key, amount in relative.groupdict().items()}
            when = now + timedelta(days=parts["d"], hours=parts["h"], minutes=parts["m"])
        else:
            when = _parse_absolute(value)
    except (OverflowError, ValueError):
        raise ValidationError({"publish_at": _("That time is out of range.")}) from None
    check_publish_at(when, now=now)
    return when


def _parse_absolute(value: str) -> datetime:
    cleaned = re.sub(r"\s*(UTC|Z)$", "", value, flags=re.IGNORECASE)
    for fmt in _ABSOLUTE_FORMATS:
        try:
            return datetime.strptime(cleaned, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise ValidationError({"publish_at": _UNREADABLE_TIME})


def check_publish_at(when: datetime, *, now: datetime | None = None) -> None:
    """A publication time must be timezone-aware, in the future, and at most a year ahead."""
    now = now or timezone.now()
    if timezone.is_naive(when):
        raise ValidationError({"publish_at": _("The time must carry a time zone.")})
    if when <= now:
        moment = f"{when.astimezone(UTC):%Y-%m-%d %H:%M} UTC"
        raise ValidationError(
            {
                "publish_at": _("%(moment)s is in the past: choose a later time or publish now.")
                % {"moment": moment}
            }
        )
    if when > now + timedelta(days=conf.MAX_SCHEDULE_DAYS):
        raise ValidationError({"publish_at": _("That is more than a year ahead.")})


def check_removal(
    *,
    publish_at: datetime | None,
    delete_at: datetime | None,
    unpin_at: datetime | None,
    pin: bool,
) -> None:
    """Unpin and delete later: an unpin time needs "pin"; both come after the publication
    time, and unpinning before the deletion (deleting the message unpins it anyway)."""
    if unpin_at is not None and not pin:
        raise ValidationError(
            {"unpin_at": _("Only a pinned post is unpinned later: tick 'pin' or clear the time.")}
        )
    if publish_at is not None:
        if delete_at is not None and delete_at <= publish_at:
            raise ValidationError(
                {"delete_at": _("The deletion time must come after the publication time.")}
            )
        if unpin_at is not None and unpin_at <= publish_at:
            raise ValidationError(
                {"unpin_at": _("The unpin time must come after the publication time.")}
            )
    if unpin_at is not None and delete_at is not None and unpin_at >= delete_at:
        raise ValidationError(
            {"unpin_at": _("Unpin before the deletion time (deleting the message unpins it).")}
        )


def check_later(when: datetime, *, field: str, now: datetime | None = None) -> None:
    """An unpin or deletion time, when set or changed: aware, ahead, at most a year ahead."""
    now = now or timezone.now()
    if timezone.is_naive(when):
        raise ValidationError({field: _("The time must carry a time zone.")})
    if when <= now:
        moment = f"{when.astimezone(UTC):%Y-%m-%d %H:%M} UTC"
        raise ValidationError(
            {field: _("%(moment)s is in the past: choose a later time.") % {"moment": moment}}
        )
    if when > now + timedelta(days=conf.MAX_SCHEDULE_DAYS):
        raise ValidationError({field: _("That is more than a year ahead.")})


def check_repeat(
    repeat: str,
    until: date | None,
    *,
    publish_at: datetime | None,
    zone_name: str,
    has_removal: bool,
    today: date | None = None,
) -> None:
    """A recurring post: a known repetition, an end date from its first publication to at
    most a year ahead, no unpin or deletion time (those belong to one message)."""
    if not repeat:
        if until is not None:
            raise ValidationError(
                {"repeat_until": _("An end date needs a repetition: choose one or clear it.")}
            )
        return
    if repeat not in recurrence.EVERY:
        raise ValidationError({"repeat": _("Repeat every day, every weekday or every week.")})
    if until is None:
        raise ValidationError({"repeat_until": _("A recurring post needs an end date.")})
    if has_removal:
        raise ValidationError(
            {"repeat": _("A recurring post has no unpin or deletion time: clear them.")}
        )
    today = today or timezone.localdate()
    if until > today + timedelta(days=conf.MAX_SCHEDULE_DAYS):
        raise ValidationError({"repeat_until": _("The end date is more than a year ahead.")})
    if publish_at is not None and until < recurrence.local_date(publish_at, zone_name):
        raise ValidationError({"repeat_until": _("The end date is before the first publication.")})
