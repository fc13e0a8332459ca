"""Playing a ticket's voice message or video note in the admin site.

The browser asks this view, never Telegram: the view calls getFile and streams the file from
the Bot API's file URL (which holds the token) through the server, bounded in size, with the
content type of its kind and ``nosniff``, so the bytes are played, never run as a page.
"""

from __future__ import annotations

import logging

from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from support.models import Ticket, TicketMessage
from telegram_bot.bot import get_client
from telegram_bot.errors import BotError, FileTooLargeError, TelegramApiError

log = logging.getLogger(__name__)
# What the admin plays, by entry kind: Telegram's voice messages are Ogg/Opus, video notes MP4.
PLAYABLE = {TicketMessage.Kind.VOICE: "audio/ogg", "video_note": "video/mp4"}
# Telegram lets bots download up to 20 MB; a voice message or video note is far below.
MAX_FILE_BYTES = 20 * 1024 * 1024
TOO_BIG = "file is too big"  # getFile's answer for a file over Telegram's download limit


@require_GET
def entry_file_view(request: HttpRequest, ticket: Ticket, entry_id: int) -> HttpResponse:
    """Stream the voice message or video note of one entry of ``ticket`` (the caller checked
    that the user may view the ticket)."""
    entry = TicketMessage.objects.filter(pk=entry_id, ticket=ticket).first()
    if entry is None or entry.kind not in PLAYABLE or not entry.file_id:
        raise Http404("no playable file in this entry")
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
    response = StreamingHttpResponse(stream, content_type=PLAYABLE[entry.kind])
    if stream.size is not None:
        response["Content-Length"] = str(stream.size)
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Disposition"] = "inline"
    response["Cache-Control"] = "private, max-age=3600"
    return response


def _too_large() -> HttpResponse:
    return _unavailable(413, _("The file is too large to play here."))


def _unavailable(status: int, message: str) -> HttpResponse:
    response = HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")
    response["X-Content-Type-Options"] = "nosniff"
    return response
