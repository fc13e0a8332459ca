"""Showing a ticket's files in the admin site: images inline, voice and video players, other
files as downloads.

The browser asks this view, never Telegram: the view calls getFile and streams the file from
the Bot API's file URL (which holds the token) through the server, bounded in size, with the
type its first bytes show (else a download), ``nosniff`` and a sandboxing CSP, so the bytes
are shown or played, never run as a page.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from support.models import Ticket, TicketMessage
from telegram_bot.bot import get_client
from telegram_bot.client import FileStream
from telegram_bot.errors import BotError, FileTooLargeError, TelegramApiError

log = logging.getLogger(__name__)
# The kinds whose file the ticket page shows (images inline, players, or a download link).
SERVED = frozenset({"photo", "document", "voice", "video_note", "video", "sticker"})
# Telegram lets bots download up to 20 MB.
MAX_FILE_BYTES = 20 * 1024 * 1024
TOO_BIG = "file is too big"  # getFile's answer for a file over Telegram's download limit
# What the bytes say a file is (its first bytes), and what may then be shown inline: the
# type never comes from Telegram's file name or the user's.
_SIGNATURES: tuple[tuple[int, bytes, str], ...] = (
    (0, b"\xff\xd8\xff", "image/jpeg"),
    (0, b"\x89PNG\r\n\x1a\n", "image/png"),
    (0, b"GIF8", "image/gif"),
    (8, b"WEBP", "image/webp"),
    (0, b"OggS", "audio/ogg"),
    (4, b"ftyp", "video/mp4"),
    (0, b"\x1a\x45\xdf\xa3", "video/webm"),
)
INLINE_FOR = {
    "photo": ("image/",),
    "sticker": ("image/", "video/webm"),
    "voice": ("audio/ogg",),
    "video_note": ("video/mp4",),
    "video": ("video/",),
}


def sniff(head: bytes) -> str | None:
    """The media type the first bytes show, or None."""
    for offset, signature, media_type in _SIGNATURES:
        if head[offset : offset + len(signature)] == signature:
            if media_type == "image/webp" and not head.startswith(b"RIFF"):
                continue
            return media_type
    return None


@require_GET
def entry_file_view(request: HttpRequest, ticket: Ticket, entry_id: int) -> HttpResponse:
    """Stream the file of one entry of ``ticket`` (the caller checked that the user may view
    the ticket): an image, audio or video whose bytes are what its kind should be is shown
    inline with the type the bytes show, anything else is a download of generic type; with
    ``nosniff`` and a sandboxing CSP either way, so the bytes are never run as a page."""
    entry = TicketMessage.objects.filter(pk=entry_id, ticket=ticket).first()
    if entry is None or entry.kind not in SERVED or not entry.file_id:
        raise Http404("no file in this entry")
    if entry.file_size is not None and entry.file_size > MAX_FILE_BYTES:
        return _too_large()
    client = get_client()
    try:
        info = client.get_file(file_id=entry.file_id)
        size = info.get("file_size")
        if isinstance(size, int) and size > MAX_FILE_BYTES:
            raise FileTooLargeError(f"file of {size} bytes")
        path = info.get("file_path")
        if not isinstance(path, str):
            raise TelegramApiError("getFile", description="no file_path in the answer")
        stream = client.download_file(path, max_bytes=MAX_FILE_BYTES)
        chunks = iter(stream)
        head = next(chunks, b"")
    except FileTooLargeError:
        return _too_large()
    except TelegramApiError as exc:
        if TOO_BIG in exc.description:
            return _too_large()
        log.warning("ticket %s entry %s: file unavailable: %s", ticket.pk, entry.pk, exc)
        return _unavailable(502, _("Telegram did not give the file; try again later."))
    except (BotError, ValueError) as exc:
        log.warning("ticket %s entry %s: file unavailable: %s", ticket.pk, entry.pk, exc)
        return _unavailable(502, _("Telegram did not give the file; try again later."))
    media_type = sniff(head)
    inline = media_type is not None and media_type.startswith(INLINE_FOR.get(entry.kind, ("-",)))
    content_type = media_type if inline and media_type else "application/octet-stream"
    response = StreamingHttpResponse(_rest(head, chunks, stream), content_type=content_type)
    if stream.size is not None:
        response["Content-Length"] = str(stream.size)
    name = f"ticket-{ticket.number}-{entry.pk}.{'bin' if not inline else entry.kind}"
    disposition = "inline" if inline else "attachment"
    response["Content-Disposition"] = f'{disposition}; filename="{name}"'
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "sandbox; default-src 'none'"
    response["Cache-Control"] = "private, max-age=3600"
    return response


def _rest(head: bytes, chunks: Iterator[bytes], stream: FileStream) -> Iterator[bytes]:
    """The file again from its first chunk; the download is closed however the response
    ends."""
    try:
        if head:
            yield head
        yield from chunks
    finally:
        stream.close()


def _too_large() -> HttpResponse:
    return _unavailable(413, _("The file is too large to show here: open it in Telegram."))


def _unavailable(status: int, message: str) -> HttpResponse:
    response = HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")
    response["X-Content-Type-Options"] = "nosniff"
    return response
